"""The local metrics table read in the shapes of ``/api/metrics``: the embedded runtime's stand-in for
Analytics Engine's SQL API.

``read_model_writer.LocalMetricsWriter`` writes one point per terminal snapshot. The Cloudflare runtime
reads Analytics Engine over the SQL API instead (``projection.analytics_engine``); both meet the REST layer
through the same reader shape (``tsumugi.api.MetricsReader``).
"""
# M-1..M-11, D-10

from __future__ import annotations

from typing import Final

from tsumugi.clock import Clock
from tsumugi.core.json_types import JsonArray, JsonObject
from tsumugi.core.states import FAILURE_STATES
from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_writer import HOUR_MS, ensure_metrics_table
from tsumugi.storage.sql_values import literal_list

_FAILED: Final = literal_list(sorted(FAILURE_STATES))  # ('FAILED', 'STALLED')


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
