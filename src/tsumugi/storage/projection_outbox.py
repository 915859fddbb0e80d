"""A shard's side of the projection: the ``outbox`` (marked jobs) and ``fresh`` (new ones) tables.

They name the jobs whose projection is due; ``ProjectionOutbox`` reads their snapshots straight from the
job rows, in the read model's columns, with the newest entries of the attempt log, and clears what was
projected unless the job changed again (ADR-0042, ADR-0119, ADR-0158). The shard reads them itself, or
the local runtime's writer process does, from the shard's file (ADR-0171).
"""
# J-190, J-192, J-193, J-95, J-96

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Final, NamedTuple, TypeAlias, TypedDict

from tsumugi.core import wire_format
from tsumugi.core.states import RETRYABLE_STATES, TERMINAL_STATES
from tsumugi.ports import Row, SqlExecutor, SqlValue
from tsumugi.storage.read_model_schema import JOB_COLUMNS
from tsumugi.storage.read_model_writer import ScalarSnapshot
from tsumugi.storage.sql_values import MAX_BOUND_PARAMS, chunks, integer, literal_list, optional_integer

_TERMINAL_LIST: Final = literal_list(sorted(TERMINAL_STATES))
# A job's D1 columns read straight from its shard row, ``seq`` being the row's version; the projection adds
# ``attempts_log`` (J-193). Reading them in the read model's order makes the snapshot without a row dict.
SNAPSHOT_KEYS: Final = tuple(column for column in JOB_COLUMNS if column != "attempts_log")
_SNAPSHOT_SELECT: Final = ", ".join(f"j.{'version' if c == 'seq' else c}" for c in SNAPSHOT_KEYS)
# The marked jobs due for projection with their snapshots, in one read; a gone job's columns are NULL. The
# last column says whether the job also still waits in ``fresh`` (ADR-0158).
_DUE_SNAPSHOTS: Final = (
    f"SELECT o.job_id, {_SNAPSHOT_SELECT}, "
    "EXISTS (SELECT 1 FROM fresh f WHERE f.created_at = j.created_at AND f.job_id = j.id) "
    "FROM outbox o LEFT JOIN job j ON j.id = o.job_id "
    f"WHERE j.id IS NULL OR j.updated_at < ? OR j.state IN {_TERMINAL_LIST} LIMIT ?"
)
_ID_AT: Final = SNAPSHOT_KEYS.index("id") + 1  # in a _DUE_SNAPSHOTS row, after o.job_id
_CLEAR_OUTBOX: Final = "DELETE FROM outbox WHERE job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?"
_CLEAR_FRESH: Final = (
    "DELETE FROM fresh WHERE created_at = ? AND job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?"
)
SNAPSHOT_ATTEMPTS: Final = 20  # J-96: snapshots carry at most the 20 newest attempt rows
ATTEMPT_KEYS: Final = ("job_id", "attempt", "state", "started_at", "finished_at", "error")
ATTEMPT_SELECT: Final = ", ".join(ATTEMPT_KEYS)


class AttemptEntry(TypedDict):
    """One ``attempt`` row, as a snapshot's ``attempts_log`` lists it."""

    job_id: str
    attempt: int
    state: str  # COMPLETED or FAILED
    started_at: int | None
    finished_at: int
    error: str | None


# ``dict`` typed as what it builds from an ``attempt`` row read in ``ATTEMPT_KEYS`` order (the table's
# types); and ``ScalarSnapshot`` itself, typed as what it builds from a job row: no column the snapshot
# reads is a BLOB (``shard_schema``), so no value is bytes.
attempt_entry: Final[Callable[[Iterable[tuple[str, SqlValue]]], AttemptEntry]] = dict  # type: ignore[assignment]
_SnapshotOfPairs: TypeAlias = Callable[[Iterable[tuple[str, SqlValue]]], ScalarSnapshot]
_scalar_snapshot: Final[_SnapshotOfPairs] = ScalarSnapshot  # type: ignore[assignment]


def _snapshot(values: Row) -> ScalarSnapshot:
    snap = _scalar_snapshot(zip(SNAPSHOT_KEYS, values, strict=True))
    snap["attempts_log"] = None
    return snap


def attempts_log_text(attempts_log: list[AttemptEntry]) -> str | None:
    """The ``attempts_log`` column: the newest attempts as JSON text, NULL for none."""
    # J-192
    return wire_format.dumps(attempts_log) if attempts_log else None


Projected: TypeAlias = Mapping[str, "tuple[SqlValue, SqlValue] | None"]
# States no transition leaves: only a retry leaves a terminal state, and only FAILED or STALLED (J-132).
FINAL_STATES: Final = TERMINAL_STATES - RETRYABLE_STATES


class ProjectedJobs(NamedTuple):
    """What a projection wrote, as its shard clears it: ``ProjectionOutbox.clear_projected``'s arguments
    and whether more jobs were due than it took."""

    versions: Projected
    fresh: Mapping[str, int]
    more: bool
    final: frozenset[str] = frozenset()  # the jobs projected COMPLETED or CANCELLED (ADR-0182)


class ProjectionBatch(NamedTuple):
    """One projection's jobs: each one's snapshot (None: gone since it was marked), the ``created_at``
    of those that also wait in ``fresh``, and whether more were due than the batch took."""

    snapshots: dict[str, ScalarSnapshot | None]
    fresh: dict[str, int]
    more: bool

    def present(self) -> list[ScalarSnapshot]:
        """The snapshots to upsert: every job the shard still holds."""
        return [snap for snap in self.snapshots.values() if snap is not None]

    def projected(self) -> ProjectedJobs:
        """What ``clear_projected`` checks: each job's projected ``(version, created_at)``, None if gone."""
        versions = {i: None if s is None else (s["seq"], s["created_at"]) for i, s in self.snapshots.items()}
        final = frozenset(
            i for i, s in self.snapshots.items() if s is not None and s["state"] in FINAL_STATES
        )
        return ProjectedJobs(versions, self.fresh, self.more, final)


class ProjectionOutbox:
    """The ``outbox`` and ``fresh`` tables of one shard as its projection reads and clears them, and the
    newest attempts its snapshots carry (``JobStore`` marks the jobs)."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def collect(self, limit: int, changed_before_ms: int) -> ProjectionBatch:
        """Up to ``limit`` jobs due for projection, with their snapshots complete.

        Changed jobs go first (``due_snapshots``), then new ones created before ``changed_before_ms``
        (ADR-0119). The reads see one state of the shard only if nothing commits between them: run
        them in a transaction, or with no await in between.
        """
        # J-192
        snaps, fresh = self.due_snapshots(limit, changed_before_ms)
        if len(snaps) < limit:
            due_fresh = self.fresh_ids(changed_before_ms, limit - len(snaps))
            new_ids = [job_id for job_id in due_fresh if job_id not in snaps]
            found = self.snapshots_of(new_ids)
            snaps.update((job_id, found.get(job_id)) for job_id in new_ids)  # None: gone since
            fresh.update(due_fresh)
        # A job that never finished an attempt has no attempt rows: they are written only by a report,
        # with the job's attempts (never lowered, J-93, J-132) raised in the same transaction (ADR-0105).
        tried = [job_id for job_id, snap in snaps.items() if snap is not None and snap["attempts"]]
        for job_id, log_entries in self.newest_attempts(tried).items():
            snap = snaps[job_id]
            assert snap is not None  # tried
            snap["attempts_log"] = attempts_log_text(log_entries)
        return ProjectionBatch(snaps, fresh, len(snaps) >= limit)

    def due_snapshots(
        self, limit: int, changed_before_ms: int
    ) -> tuple[dict[str, ScalarSnapshot | None], dict[str, int]]:
        """Marked jobs whose projection is due (ADR-0135), as read-model snapshots, in one statement.

        Due: finished, gone (None), or last changed before ``changed_before_ms``; a job still in flight
        that changed state since waits, so that if it finishes first one projection shows both changes.
        Also returns the ``created_at`` of those still waiting in ``fresh`` too. A snapshot's
        ``attempts_log`` is None until the caller sets it (ADR-0158).
        """
        snaps: dict[str, ScalarSnapshot | None] = {}
        in_fresh: dict[str, int] = {}
        for row in self.sql.execute(_DUE_SNAPSHOTS, (changed_before_ms, limit)):
            job_id = str(row[0])
            if row[_ID_AT] is None:
                snaps[job_id] = None
                continue
            snap = snaps[job_id] = _snapshot(row[1:-1])
            if row[-1]:
                in_fresh[job_id] = integer(snap["created_at"])
        return snaps, in_fresh

    def snapshots_of(self, job_ids: list[str]) -> dict[str, ScalarSnapshot]:
        """``due_snapshots``' snapshots of the given jobs the shard holds, by id."""
        found: dict[str, ScalarSnapshot] = {}
        for part in chunks(job_ids):
            marks = ", ".join("?" * len(part))
            for row in self.sql.execute(
                f"SELECT {_SNAPSHOT_SELECT} FROM job j WHERE j.id IN ({marks})", part
            ):
                found[str(row[_ID_AT - 1])] = _snapshot(row)
        return found

    def newest_attempts(
        self, job_ids: list[str], limit: int = SNAPSHOT_ATTEMPTS
    ) -> dict[str, list[AttemptEntry]]:
        """The newest attempt rows of each job, newest first: one statement per chunk of ids; a job
        without rows is absent."""
        # J-95, J-96
        found: dict[str, list[AttemptEntry]] = {}
        for start in range(0, len(job_ids), MAX_BOUND_PARAMS):
            part = job_ids[start : start + MAX_BOUND_PARAMS]
            rows = self.sql.execute(
                f"SELECT {ATTEMPT_SELECT} FROM attempt "
                f"WHERE job_id IN ({', '.join('?' * len(part))}) ORDER BY job_id, attempt DESC",
                part,
            )
            for row in rows:
                entries = found.setdefault(str(row[0]), [])
                if len(entries) < limit:
                    entries.append(attempt_entry(zip(ATTEMPT_KEYS, row, strict=True)))
        return found

    def earliest_waiting_mark(self) -> int | None:
        """When the earliest marked job still in flight last changed state (its projection waits)."""
        rows = self.sql.execute(
            # CROSS JOIN keeps the (small) outbox as the outer loop whatever the planner guesses.
            "SELECT min(j.updated_at) FROM outbox o CROSS JOIN job j ON j.id = o.job_id "
            f"WHERE j.state NOT IN {_TERMINAL_LIST}"
        )
        return optional_integer(rows[0][0]) if rows else None

    def fresh_ids(self, created_before_ms: int, limit: int) -> dict[str, int]:
        """New jobs created before ``created_before_ms`` and never projected, oldest first (ADR-0119).

        Maps each id to its ``created_at``, the other half of the ``fresh`` key.
        """
        rows = self.sql.execute(
            "SELECT job_id, created_at FROM fresh WHERE created_at < ? ORDER BY created_at LIMIT ?",
            (created_before_ms, limit),
        )
        return {str(job_id): integer(created_at) for job_id, created_at in rows}

    def earliest_fresh(self) -> int | None:
        """``created_at`` of the oldest job still waiting for its first projection."""
        rows = self.sql.execute("SELECT created_at FROM fresh ORDER BY created_at LIMIT 1")
        return integer(rows[0][0]) if rows else None

    def clear_projected(
        self, projected: Projected, fresh_created: Mapping[str, int], final: AbstractSet[str] = frozenset()
    ) -> None:
        """Unmark projected jobs unless they changed again since (their version moved on).

        ``projected`` maps each id to the ``(version, created_at)`` that was projected, None for a job
        that is gone; ``fresh_created`` gives the creation time of the ids that wait in ``fresh`` (a gone
        job has no row): only those are looked for there. A job in ``final`` was projected in a state
        nothing leaves (COMPLETED or CANCELLED) and is unmarked without reading its version (ADR-0182).
        """
        gone = [job_id for job_id, kept in projected.items() if kept is None]
        if gone:
            self.sql.execute_many(
                "DELETE FROM outbox WHERE job_id = ? AND NOT EXISTS (SELECT 1 FROM job WHERE id = ?)",
                [(job_id, job_id) for job_id in gone],
            )
            self.sql.execute_many(
                "DELETE FROM fresh WHERE created_at = ? AND job_id = ? "
                "AND NOT EXISTS (SELECT 1 FROM job WHERE id = ?)",
                [(fresh_created[job_id], job_id, job_id) for job_id in gone if job_id in fresh_created],
            )
        done = [job_id for job_id, kept in projected.items() if kept is not None and job_id in final]
        for part in chunks(done):
            # A finished job is never changed again while it is marked: no transition leaves COMPLETED or
            # CANCELLED, and the sweep passes over marked jobs (J-170).
            self.sql.execute(f"DELETE FROM outbox WHERE job_id IN ({', '.join('?' * len(part))})", part)
        finished_fresh = [(fresh_created[i], i) for i in done if i in fresh_created]
        if finished_fresh:
            self.sql.execute_many("DELETE FROM fresh WHERE created_at = ? AND job_id = ?", finished_fresh)
        kept = [
            (job_id, kept) for job_id, kept in projected.items() if kept is not None and job_id not in final
        ]
        if kept:
            self.sql.execute_many(_CLEAR_OUTBOX, [(i, i, version) for i, (version, _) in kept])
            fresh = [(created_at, i, i, version) for i, (version, created_at) in kept if i in fresh_created]
            if fresh:
                self.sql.execute_many(_CLEAR_FRESH, fresh)
