"""What a shard writes into the read model: the D1 rows and the metric points.

A shard's side, its ``outbox`` and ``fresh`` tables, is ``projection_outbox``. ``D1ReadModelWriter``
upserts job, run and node snapshots over any ``SqlDatabase`` (D1 or the local SQLite file), guarded by
``seq``, and ``LocalMetricsWriter`` adds one point per terminal job to the local metrics table, the
embedded runtime's stand-in for Analytics Engine. The table is created on demand with ``IF NOT EXISTS``,
since it is not one of the shipped migrations (ADR-0064); ``metrics_reader`` answers ``/api/metrics``
from it.
"""
# J-190, J-193, F-84, D-9, M-1..M-5

from __future__ import annotations

import logging
import operator
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

from tsumugi.core.json_types import JsonScalar
from tsumugi.ports import SqlDatabase, SqlValue
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
            await self._db.batch(run_statements(snapshots))

    async def upsert_run_nodes(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if snapshots:
            await self._db.batch(run_node_statements(snapshots))

    async def delete_terminal_jobs(self, before_ms: int, limit: int) -> int:
        """Delete at most ``limit`` terminal job rows last updated before ``before_ms``."""
        # J-172
        return await self._db.run(SWEEP_JOBS_SQL, (*TERMINAL_JOB_STATES, before_ms, limit))


Statements: TypeAlias = list[tuple[str, Sequence[SqlValue]]]


def run_statements(snapshots: Sequence[Mapping[str, object]]) -> Statements:
    """The upserts of run snapshots."""
    return [(UPSERT_RUN_SQL, run_row(s)) for s in snapshots]


def run_node_statements(snapshots: Sequence[Mapping[str, object]]) -> Statements:
    """The upserts of node snapshots, and of what their waiting nodes wait for."""
    statements: Statements = [(UPSERT_RUN_NODE_SQL, run_node_row(s)) for s in snapshots]
    waits = [s for s in snapshots if s.get("wait") is not None]
    if waits:  # ADR-0155: the side table exists once a run has waited
        statements.append((RUN_NODE_WAIT_DDL, ()))
        statements += [(UPSERT_RUN_NODE_WAIT_SQL, run_node_wait_row(s)) for s in waits]
    return statements


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
