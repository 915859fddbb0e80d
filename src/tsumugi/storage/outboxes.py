"""The shard's outboxes: what it owes the read model, the runs and the notice targets.

The projection's are the ``outbox`` (marked jobs) and ``fresh`` (new ones). Every change to a job marks it
in the outbox, unless the job still waits in ``fresh`` for its first projection, which reads the row as
it is then; a finished job is marked at once (ADR-0042, ADR-0119). A projected job is unmarked only if
it still has the version that was projected.

The events for other actors are ``run_notify`` (run notifications) and ``notice``: both are filled in the
same transaction as the terminal transition and drained by the tick, deleted only after delivery
succeeded (at-least-once).
"""
# J-190, J-192, F-45, J-180b

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, NamedTuple, NotRequired, TypeAlias, TypedDict

from tsumugi.core import jsonwire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.states import TERMINAL_STATES
from tsumugi.ports import Row, SqlExecutor, SqlValue
from tsumugi.storage.job_rows import JobRow, chunks, integer, literal_list, optional_integer
from tsumugi.storage.read_model_schema import JOB_COLUMNS as READ_MODEL_COLUMNS
from tsumugi.storage.read_model_writer import ScalarSnapshot

MARK: Final = "INSERT OR IGNORE INTO outbox (job_id) VALUES (?)"
# A change to a job still waiting for its first projection needs no mark: that projection reads the row.
_MARK_UNLESS_FRESH: Final = (
    "INSERT OR IGNORE INTO outbox (job_id) SELECT ? "
    "WHERE NOT EXISTS (SELECT 1 FROM fresh WHERE created_at = ? AND job_id = ?)"
)
_CLEAR_OUTBOX: Final = "DELETE FROM outbox WHERE job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?"
_CLEAR_FRESH: Final = (
    "DELETE FROM fresh WHERE created_at = ? AND job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?"
)
_TERMINAL_LIST: Final = literal_list(sorted(TERMINAL_STATES))
# A job's D1 columns read straight from its shard row, ``seq`` being the row's version; the projection adds
# ``attempts_log`` (J-193). Reading them in the read model's order makes the snapshot without a row dict.
SNAPSHOT_KEYS: Final = tuple(column for column in READ_MODEL_COLUMNS if column != "attempts_log")
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


# ``ScalarSnapshot`` itself, typed as what it builds here: no column the snapshot reads is a BLOB
# (``shard_schema``), so no value is bytes; the same device as ``job_rows.job_from_row``.
_SnapshotOfPairs: TypeAlias = Callable[[Iterable[tuple[str, SqlValue]]], ScalarSnapshot]
_scalar_snapshot: Final[_SnapshotOfPairs] = ScalarSnapshot  # type: ignore[assignment]


def _snapshot(values: Row) -> ScalarSnapshot:
    snap = _scalar_snapshot(zip(SNAPSHOT_KEYS, values, strict=True))
    snap["attempts_log"] = None
    return snap


class JobMarks:
    """The ``outbox`` and ``fresh`` tables of one shard (``JobStore`` carries these methods)."""

    sql: SqlExecutor

    def mark_changed(self, job: JobRow) -> None:
        """Mark a changed job for projection; free when already marked (ADR-0042).

        A finished job is marked at once; a job still waiting for its first projection is left to it.
        """
        # J-190
        if job["state"] in TERMINAL_STATES:
            self.sql.execute(MARK, (job["id"],))
        else:
            self.sql.execute(_MARK_UNLESS_FRESH, (job["id"], job["created_at"], job["id"]))

    def mark_changed_many(self, jobs: list[JobRow]) -> None:
        """``mark_changed`` for many jobs: one statement per chunk, finished and unfinished apart."""
        finished = [job["id"] for job in jobs if job["state"] in TERMINAL_STATES]
        unfinished = [job["id"] for job in jobs if job["state"] not in TERMINAL_STATES]
        for part in chunks(finished):
            values = ", ".join(["(?)"] * len(part))
            self.sql.execute(f"INSERT OR IGNORE INTO outbox (job_id) VALUES {values}", part)
        for part in chunks(unfinished):
            self.sql.execute(
                "INSERT OR IGNORE INTO outbox (job_id) SELECT j.id FROM job j "
                f"WHERE j.id IN ({', '.join('?' * len(part))}) AND NOT EXISTS "
                "(SELECT 1 FROM fresh f WHERE f.created_at = j.created_at AND f.job_id = j.id)",
                part,
            )

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

    def count_dirty(self) -> int:
        """Jobs waiting for a projection, marked or fresh."""
        # J-185
        rows = self.sql.execute(
            "SELECT count(*) FROM (SELECT job_id FROM outbox UNION SELECT job_id FROM fresh)"
        )
        return integer(rows[0][0])

    def clear_dirty(self, projected: Mapping[str, JobRow | None], fresh_created: Mapping[str, int]) -> None:
        """Unmark projected jobs unless they changed again since (their version moved on).

        ``projected`` maps each id to the row that was projected, None for a job that is gone;
        ``fresh_created`` gives the creation time of the ids that wait in ``fresh`` (a gone job has no
        row): only those are looked for there.
        """
        versions = {i: None if r is None else (r["version"], r["created_at"]) for i, r in projected.items()}
        self.clear_projected(versions, fresh_created)

    def clear_projected(
        self, projected: Mapping[str, tuple[SqlValue, SqlValue] | None], fresh_created: Mapping[str, int]
    ) -> None:
        """``clear_dirty`` given each projected job's ``(version, created_at)``, None for a gone job."""
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
        kept = [(job_id, kept) for job_id, kept in projected.items() if kept is not None]
        if kept:
            self.sql.execute_many(_CLEAR_OUTBOX, [(i, i, version) for i, (version, _) in kept])
            fresh = [(created_at, i, i, version) for i, (version, created_at) in kept if i in fresh_created]
            if fresh:
                self.sql.execute_many(_CLEAR_FRESH, fresh)


# ---------------------------------------------------------------------- events for runs and notices
class RunJobEvent(TypedDict):
    """What a run learns of its node's job when the job settles (``RunRpc.notify``)."""

    # F-45

    nodeId: str | None
    jobId: str
    state: str
    result: str | None  # the stored result JSON text
    error: str | None
    spawns: NotRequired[Sequence[object]]  # F-55: the spawn requests of a completed attempt


RunEvent: TypeAlias = tuple[str, RunJobEvent]  # (run id, event)


def _object(value: object) -> JsonObject:
    """A stored event or payload: written from a dict, so it reads back as one."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, read {type(value).__name__}")
    return value


class Notice(NamedTuple):
    """A notice job waiting to be enqueued at its target; it keeps the job's traceparent."""

    # J-180b, J-40

    seq: int
    target: str
    notice_id: str
    payload: JsonObject
    traceparent: str | None


class EventOutbox:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def add_run_event(self, run_id: str, event: RunJobEvent) -> None:
        self.sql.execute(
            "INSERT INTO run_notify (run_id, event) VALUES (?, ?)", (run_id, jsonwire.dumps(event))
        )

    def add_run_events(self, events: list[RunEvent]) -> None:
        """``add_run_event`` for many events, in order: one ``executemany``."""
        if events:
            self.sql.execute_many(
                "INSERT INTO run_notify (run_id, event) VALUES (?, ?)",
                [(run_id, jsonwire.dumps(event)) for run_id, event in events],
            )

    def run_events(self, limit: int) -> list[tuple[int, str, JsonObject]]:
        """The oldest events as ``(seq, run id, event)``, each as it reached JSON and came back."""
        rows = self.sql.execute("SELECT seq, run_id, event FROM run_notify ORDER BY seq LIMIT ?", (limit,))
        return [(integer(s), str(r), _object(jsonwire.loads(str(e)))) for s, r, e in rows]

    def delete_run_events(self, seqs: list[int]) -> None:
        self.sql.execute_many("DELETE FROM run_notify WHERE seq = ?", ((s,) for s in seqs))

    def add_notice(self, target: str, notice_id: str, payload: JsonObject, traceparent: str | None) -> None:
        self.sql.execute(
            "INSERT INTO notice (target, notice_id, payload, traceparent) VALUES (?, ?, ?, ?)",
            (target, notice_id, jsonwire.dumps(payload), traceparent),
        )

    def notices(self, limit: int) -> list[Notice]:
        rows = self.sql.execute(
            "SELECT seq, target, notice_id, payload, traceparent FROM notice ORDER BY seq LIMIT ?", (limit,)
        )
        return [
            Notice(
                integer(s), str(t), str(i), _object(jsonwire.loads(str(p))), None if tp is None else str(tp)
            )
            for s, t, i, p, tp in rows
        ]

    def delete_notices(self, seqs: list[int]) -> None:
        self.sql.execute_many("DELETE FROM notice WHERE seq = ?", ((s,) for s in seqs))
