"""Local metrics: write one point per terminal snapshot and answer ``/api/metrics`` from SQLite.

The Cloudflare runtime writes Analytics Engine points and reads them over the SQL API instead; both sides
meet the REST layer through the same reader shape (``tsumugi.api.MetricsReader``, ADR-0064).
"""
# M-1..M-11

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from tsumugi.clock import Clock
from tsumugi.core.json_types import JsonArray, JsonObject
from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage import read_model_metrics as metrics_sql

_log = logging.getLogger("tsumugi")


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
                await metrics_sql.ensure_metrics_table(self._db)
                self._ready = True
            return await metrics_sql.insert_points(self._db, snapshots)
        except Exception:  # M-4: a metrics failure never stops the tick
            _log.exception("tsumugi: writeMetrics failed")  # the catalogue text (jobs.md §11, M-4)
            return 0


class LocalMetricsReader:
    """Reads the local metrics table in the shapes of ``/api/metrics``."""

    def __init__(self, db: SqlDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def read(self, hours: int, binding: str | None) -> JsonObject:
        await metrics_sql.ensure_metrics_table(self._db)
        since_ms = self._clock.now() - hours * metrics_sql.HOUR_MS
        rows = await metrics_sql.binding_metrics(self._db, since_ms, binding)
        series = await metrics_sql.hourly_series(self._db, since_ms, binding)
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
