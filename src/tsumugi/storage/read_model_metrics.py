"""The local metrics table: the embedded runtime's stand-in for Analytics Engine, written and read.

It is not one of the shipped migrations (fixes those to the original's eight files), so it is created
on demand with ``IF NOT EXISTS`` (ADR-0064). ``LocalMetricsWriter`` writes one point per terminal
snapshot; ``LocalMetricsReader`` answers ``/api/metrics`` from the table. The Cloudflare runtime writes
Analytics Engine points and reads them over the SQL API instead (``projection.analytics_engine``); both
meet the REST layer through the same reader shape (``tsumugi.api.MetricsReader``).
"""
# M-1..M-11, D-10

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Final

from tsumugi.clock import Clock
from tsumugi.core.json_types import JsonArray, JsonObject, JsonScalar
from tsumugi.core.states import FAILURE_STATES
from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.job_rows import literal_list
from tsumugi.storage.read_model_schema import TERMINAL_JOB_STATES
from tsumugi.storage.read_model_writer import ScalarSnapshot

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
_FAILED: Final = literal_list(sorted(FAILURE_STATES))  # ('FAILED', 'STALLED')
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
    points = [p for p in (metric_point(s) for s in snapshots) if p is not None]
    if points:
        newest_ms = max(int(p[0] or 0) for p in points)
        prune = (PRUNE_POINTS_SQL, (newest_ms - KEPT_HOURS * HOUR_MS,))
        await db.batch([*((INSERT_POINT_SQL, p) for p in points), prune])
    return len(points)


def _window(since_ms: int, binding: str | None) -> tuple[str, list[SqlValue]]:
    if binding is None:
        return "at > ?", [since_ms]
    return "at > ? AND binding = ?", [since_ms, binding]


async def binding_metrics(db: SqlDatabase, since_ms: int, binding: str | None) -> list[dict[str, SqlValue]]:
    """Per-binding totals, ordered by total descending; p95 is the nearest-rank 95th percentile."""
    # M-8
    where, params = _window(since_ms, binding)
    return await db.all(
        "SELECT binding, COUNT(*) AS total, "
        f"SUM(CASE WHEN state IN {_FAILED} THEN 1 ELSE 0 END) AS failed, "
        "AVG(duration_ms) AS avg_duration, MAX(duration_ms) AS max_duration, AVG(attempts) AS avg_attempts, "
        "(SELECT MIN(r.duration_ms) FROM (SELECT duration_ms, "
        "ROW_NUMBER() OVER (ORDER BY duration_ms) AS rn, COUNT(*) OVER () AS n "
        "FROM tsumugi_metric i WHERE i.binding = o.binding AND i.at > ?) r "
        "WHERE r.rn >= 0.95 * r.n) AS p95_duration "
        f"FROM tsumugi_metric o WHERE {where} GROUP BY binding ORDER BY total DESC, binding ASC",
        [since_ms, *params],
    )


async def hourly_series(db: SqlDatabase, since_ms: int, binding: str | None) -> list[dict[str, SqlValue]]:
    """Totals per hour start, ascending."""
    # M-8, M-10
    where, params = _window(since_ms, binding)
    return await db.all(
        f"SELECT (at / {HOUR_MS}) * {HOUR_MS} AS hour_at, COUNT(*) AS total, "
        f"SUM(CASE WHEN state IN {_FAILED} THEN 1 ELSE 0 END) AS failed, AVG(duration_ms) AS avg_duration "
        f"FROM tsumugi_metric WHERE {where} GROUP BY hour_at ORDER BY hour_at ASC",
        params,
    )


def _number(value: SqlValue) -> float:
    # M-9: non-numeric values read as 0.
    return float(value) if isinstance(value, int | float) else 0.0


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


class LocalMetricsReader:
    """Reads the local metrics table in the shapes of ``/api/metrics``."""

    def __init__(self, db: SqlDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def read(self, hours: int, binding: str | None) -> JsonObject:
        await ensure_metrics_table(self._db)
        since_ms = self._clock.now() - hours * HOUR_MS
        rows = await binding_metrics(self._db, since_ms, binding)
        series = await hourly_series(self._db, since_ms, binding)
        bindings: JsonArray = []
        for row in rows:
            total = _number(row["total"])
            failed = _number(row["failed"])
            bindings.append(
                {
                    "binding": str(row["binding"]),
                    "total": total,
                    "failed": failed,
                    "failureRate": failed / total if total else 0,
                    "avgDurationMs": _number(row["avg_duration"]),
                    "maxDurationMs": _number(row["max_duration"]),
                    "p95DurationMs": _number(row["p95_duration"]),
                    "avgAttempts": _number(row["avg_attempts"]),
                }
            )
        points: JsonArray = [
            {
                "at": _number(row["hour_at"]),
                "total": _number(row["total"]),
                "failed": _number(row["failed"]),
                "avgDurationMs": _number(row["avg_duration"]),
            }
            for row in series
        ]
        return {"bindings": bindings, "series": points}
