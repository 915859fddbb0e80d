"""What a shard writes into the read model, from its outbox to the D1 rows and the metric points.

A shard's side: the ``outbox`` (marked jobs) and ``fresh`` (new ones) name the jobs whose projection is
due; ``ProjectionOutbox`` reads their snapshots straight from the job rows, in the read model's columns,
with the newest entries of the attempt log, and clears what was projected unless the job changed again
(ADR-0042, ADR-0119, ADR-0158). The read model's side: ``D1ReadModelWriter`` upserts job, run and node
snapshots over any ``SqlDatabase`` (D1 or the local SQLite file), guarded by ``seq``, and
``LocalMetricsWriter`` adds one point per terminal job to the local metrics table, the embedded runtime's
stand-in for Analytics Engine. The table is created on demand with ``IF NOT EXISTS``, since it is not one
of the shipped migrations (ADR-0064); ``metrics_reader`` answers ``/api/metrics`` from it.
"""
# J-190, J-192, J-193, J-95, J-96, F-84, D-9, M-1..M-5

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, NamedTuple, TypeAlias, TypedDict

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonScalar
from tsumugi.core.states import TERMINAL_STATES
from tsumugi.ports import Row, SqlDatabase, SqlExecutor, SqlValue
from tsumugi.storage.job_table import MAX_BOUND_PARAMS, chunks, integer, literal_list, optional_integer
from tsumugi.storage.read_model_runs import (
    UPSERT_RUN_NODE_SQL,
    UPSERT_RUN_NODE_WAIT_SQL,
    UPSERT_RUN_SQL,
    run_node_row,
    run_node_wait_row,
    run_row,
)
from tsumugi.storage.read_model_schema import (
    JOB_COLUMNS,
    JOB_FROZEN_COLUMNS,
    RUN_NODE_WAIT_DDL,
    TERMINAL_JOB_STATES,
    json_text,
    sql_value,
    upsert_sql,
)

_JOB_KEYS: Final = frozenset(JOB_COLUMNS)
UPSERT_JOB_SQL: Final = upsert_sql("job", JOB_COLUMNS, ("id",), JOB_FROZEN_COLUMNS)
# D-9: one sweep run deletes at most `limit` terminal rows; the state index finds them.
SWEEP_JOBS_SQL: Final = (
    "DELETE FROM job WHERE id IN (SELECT id FROM job WHERE state IN (?, ?, ?, ?) AND updated_at < ? LIMIT ?)"
)
_job_values = operator.itemgetter(*JOB_COLUMNS)  # in C
_SCALARS: Final = (str, int, float, type(None))


class ScalarSnapshot(dict[str, JsonScalar]):
    """A job snapshot with every D1 column, each already a SQL scalar (JSON columns as text).

    A shard builds one from its own row, whose values SQLite gave it, so ``job_row`` binds it as it is,
    without checking each value (ADR-0158); any other mapping is checked and converted.
    """

    __slots__ = ()


def job_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for one job snapshot: JSON columns as text, an empty attempt list as NULL."""
    # J-190
    if type(snapshot) is ScalarSnapshot:
        shard_values: tuple[SqlValue, ...] = _job_values(snapshot)
        return shard_values
    if snapshot.keys() >= _JOB_KEYS and snapshot["payload"] is not None and snapshot["attempts_log"] != []:
        # A shard's snapshot: every column present and already text or a number (ADR-0136).
        values: tuple[SqlValue, ...] = _job_values(snapshot)  # each checked next
        if all(type(value) in _SCALARS for value in values):
            return values
    return _job_row_converted(snapshot)


def _job_row_converted(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    log = snapshot.get("attempts_log")
    converted: dict[str, object] = dict(snapshot)
    converted["payload"] = json_text(snapshot.get("payload", "null")) or "null"
    converted["result"] = json_text(snapshot.get("result"))
    converted["attempts_log"] = None if not log else json_text(log)
    return tuple(sql_value(converted.get(column)) for column in JOB_COLUMNS)


class D1ReadModelWriter:
    """``ports.ReadModelWriter`` over any ``SqlDatabase`` (D1 or the local SQLite file).

    Every snapshot carries ``seq``, the outbox sequence of its coordinator; a row only moves forward, so a
    replayed or reordered batch is a no-op.
    """

    # D-9

    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    async def upsert_jobs(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if snapshots:
            await self._db.batch([(UPSERT_JOB_SQL, job_row(s)) for s in snapshots])

    async def upsert_runs(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if snapshots:
            await self._db.batch([(UPSERT_RUN_SQL, run_row(s)) for s in snapshots])

    async def upsert_run_nodes(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if not snapshots:
            return
        statements: list[tuple[str, Sequence[SqlValue]]] = [
            (UPSERT_RUN_NODE_SQL, run_node_row(s)) for s in snapshots
        ]
        waits = [s for s in snapshots if s.get("wait") is not None]
        if waits:  # ADR-0155: the side table exists once a run has waited
            statements.append((RUN_NODE_WAIT_DDL, ()))
            statements += [(UPSERT_RUN_NODE_WAIT_SQL, run_node_wait_row(s)) for s in waits]
        await self._db.batch(statements)

    async def delete_terminal_jobs(self, before_ms: int, limit: int) -> int:
        """Delete at most ``limit`` terminal job rows last updated before ``before_ms``."""
        # J-172
        return await self._db.run(SWEEP_JOBS_SQL, (*TERMINAL_JOB_STATES, before_ms, limit))


# ---------------------------------------------------------------------- metric points (M-1..M-5)
HOUR_MS: Final = 3_600_000
METRICS_DDL: Final[tuple[str, ...]] = (
    "CREATE TABLE IF NOT EXISTS tsumugi_metric (at INTEGER NOT NULL, binding TEXT NOT NULL, "
    "state TEXT NOT NULL, guarantee TEXT NOT NULL, attempts INTEGER NOT NULL, duration_ms INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS tsumugi_metric_at ON tsumugi_metric (at)",
)
INSERT_POINT_SQL: Final = (
    "INSERT INTO tsumugi_metric (at, binding, state, guarantee, attempts, duration_ms) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
PRUNE_POINTS_SQL: Final = "DELETE FROM tsumugi_metric WHERE at < ?"
KEPT_HOURS: Final = 720  # the widest window /api/metrics accepts
_log: Final = logging.getLogger("tsumugi")


def _int(value: object) -> int:
    """``int()`` of a snapshot's number."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"expected a number in the snapshot, got {value!r}")


async def ensure_metrics_table(db: SqlDatabase) -> None:
    await db.batch([(sql, ()) for sql in METRICS_DDL])


def metric_point(snapshot: Mapping[str, object]) -> tuple[JsonScalar, ...] | None:
    """One point per terminal snapshot; duration = max(0, updated_at - dispatched_at) or 0."""
    # M-2, M-3
    state = snapshot.get("state")
    if state not in TERMINAL_JOB_STATES:
        return None
    if type(snapshot) is ScalarSnapshot:  # a shard's: numbers and text as SQLite gave them (ADR-0158)
        updated, dispatched = snapshot["updated_at"], snapshot["dispatched_at"]
        if type(updated) is int and (dispatched is None or type(dispatched) is int):
            duration = 0 if dispatched is None else max(0, updated - dispatched)
            binding, guarantee, attempts = snapshot["binding"], snapshot["guarantee"], snapshot["attempts"]
            return (updated, binding, state, guarantee, attempts, duration)
    updated_at = _int(snapshot.get("updated_at") or 0)
    dispatched_at = snapshot.get("dispatched_at")
    duration_ms = 0 if dispatched_at is None else max(0, updated_at - _int(dispatched_at))
    return (
        updated_at,
        str(snapshot.get("binding")),
        str(state),
        str(snapshot.get("guarantee") or ""),
        _int(snapshot.get("attempts") or 0),
        duration_ms,
    )


async def insert_points(db: SqlDatabase, snapshots: Sequence[Mapping[str, object]]) -> int:
    """Add one row per terminal snapshot and, in the same batch, drop rows no window can reach any more.

    The newest point written stands in for "now" (the writer has no clock); rows older than the widest
    window ``/api/metrics`` accepts are unreachable, so the table stays bounded (ADR-0127). That keeps them
    well past the read-model sweep's 7 days, so metrics still outlive the job rows.
    """
    # M-5
    statements = point_statements(snapshots)
    if statements:
        await db.batch(statements)
    return len(statements) - 1 if statements else 0


def point_statements(snapshots: Sequence[Mapping[str, object]]) -> list[tuple[str, Sequence[SqlValue]]]:
    """``insert_points``' batch: one insert per terminal snapshot, then the prune; empty for none."""
    # M-5
    points = [p for p in (metric_point(s) for s in snapshots) if p is not None]
    if not points:
        return []
    newest_ms = max(int(p[0] or 0) for p in points)
    return [*((INSERT_POINT_SQL, p) for p in points), (PRUNE_POINTS_SQL, (newest_ms - KEPT_HOURS * HOUR_MS,))]


class LocalMetricsWriter:
    """Writes points after a projection batch committed; errors are logged and swallowed."""

    # M-4

    def __init__(self, db: SqlDatabase) -> None:
        self._db = db
        self._ready = False

    async def write(self, snapshots: Sequence[Mapping[str, object]]) -> int:
        try:
            if not self._ready:
                await ensure_metrics_table(self._db)
                self._ready = True
            return await insert_points(self._db, snapshots)
        except Exception:  # M-4: a metrics failure never stops the tick
            _log.exception("tsumugi: writeMetrics failed")  # the catalogue text (jobs.md §11, M-4)
            return 0


# ---------------------------------------------------------------------- the shard's outbox (J-190, J-192)
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
# reads is a BLOB (``shard_schema``), so no value is bytes. The same device as ``job_table.job_from_row``.
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


class ProjectedJobs(NamedTuple):
    """What a projection wrote, as its shard clears it: ``ProjectionOutbox.clear_projected``'s arguments
    and whether more jobs were due than it took."""

    versions: Projected
    fresh: Mapping[str, int]
    more: bool


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
        return ProjectedJobs(versions, self.fresh, self.more)


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

    def clear_projected(self, projected: Projected, fresh_created: Mapping[str, int]) -> None:
        """Unmark projected jobs unless they changed again since (their version moved on).

        ``projected`` maps each id to the ``(version, created_at)`` that was projected, None for a job
        that is gone; ``fresh_created`` gives the creation time of the ids that wait in ``fresh`` (a gone
        job has no row): only those are looked for there.
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
        kept = [(job_id, kept) for job_id, kept in projected.items() if kept is not None]
        if kept:
            self.sql.execute_many(_CLEAR_OUTBOX, [(i, i, version) for i, (version, _) in kept])
            fresh = [(created_at, i, i, version) for i, (version, created_at) in kept if i in fresh_created]
            if fresh:
                self.sql.execute_many(_CLEAR_FRESH, fresh)
