"""What ``GET /metrics`` reads from the read model (ADR-0139): counts by label, and the metric-point counters.

Counts are gauges: rows in ``job`` by binding and state, in ``run`` by flow and state. The counters are
built from the local metrics table (``tsumugi_metric``, one point per settled job, ADR-0064): each scrape
adds only the rows written since the last one, found by ``rowid``, so pruning old points (ADR-0127) never
makes a counter go down.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Final

from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_writer import ensure_metrics_table

# Upper bounds of the duration histogram in ms: 5 ms .. 15 min, the longest a local consumer holds a
# lease (dispatch_queue.LEASE_MS); Prometheus's default buckets stop at 10 s, short for jobs.
DURATION_BUCKETS_MS: Final[tuple[int, ...]] = (
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
)  # fmt: skip

JOBS_SQL: Final = "SELECT binding, state, COUNT(*) AS n FROM job GROUP BY binding, state"
RUNS_SQL: Final = "SELECT flow, state, COUNT(*) AS n FROM run GROUP BY flow, state"
LAST_POINT_SQL: Final = "SELECT MAX(rowid) AS last FROM tsumugi_metric"
_BUCKET_SUMS: Final = ", ".join(
    f"SUM(CASE WHEN duration_ms <= {bound} THEN 1 ELSE 0 END) AS le_{bound}" for bound in DURATION_BUCKETS_MS
)
NEW_POINTS_SQL: Final = (
    "SELECT binding, state, COUNT(*) AS jobs, SUM(attempts) AS attempts, SUM(duration_ms) AS duration_ms, "
    f"{_BUCKET_SUMS} FROM tsumugi_metric WHERE rowid > ? AND rowid <= ? AND at >= ? GROUP BY binding, state"
)

Labels = tuple[str, str]


def _int(value: SqlValue) -> int:
    return int(value) if isinstance(value, int | float) else 0


async def counts_by(db: SqlDatabase, sql: str, first: str) -> dict[Labels, int]:
    """``{(first label, state): rows}`` from one of the GROUP BY statements above."""
    rows = await db.all(sql)
    return {(str(row[first]), str(row["state"])): _int(row["n"]) for row in rows}


@dataclass
class SettledTotals:
    """Cumulative figures of one ``(binding, state)``: jobs, their attempts, last-attempt durations."""

    jobs: int = 0
    attempts: int = 0
    duration_ms: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * len(DURATION_BUCKETS_MS))


class SettledCounters:
    """Counters over the metric points of jobs that settled at or after ``since_ms``.

    One per runtime. A lock keeps two concurrent scrapes from adding the same rows twice.
    """

    def __init__(self, since_ms: int) -> None:
        self.since_ms = since_ms
        self.totals: dict[Labels, SettledTotals] = {}
        self._seen_rowid = 0
        self._lock = asyncio.Lock()

    async def refresh(self, db: SqlDatabase) -> dict[Labels, SettledTotals]:
        """Add the points written since the last refresh and return a copy of every total."""
        async with self._lock:
            await ensure_metrics_table(db)
            [row] = await db.all(LAST_POINT_SQL)
            last = _int(row["last"])
            # Rowids only grow while the newest point stays (pruning keeps it); if the table was emptied
            # behind our back, new rows restart lower and would be missed without this.
            start = min(self._seen_rowid, last)
            if last > start:
                for point in await db.all(NEW_POINTS_SQL, (start, last, self.since_ms)):
                    self._add(point)
            self._seen_rowid = last
            return {key: replace(totals, buckets=list(totals.buckets)) for key, totals in self.totals.items()}

    def _add(self, point: dict[str, SqlValue]) -> None:
        key = (str(point["binding"]), str(point["state"]))
        totals = self.totals.setdefault(key, SettledTotals())
        totals.jobs += _int(point["jobs"])
        totals.attempts += _int(point["attempts"])
        totals.duration_ms += _int(point["duration_ms"])
        for index, bound in enumerate(DURATION_BUCKETS_MS):
            totals.buckets[index] += _int(point[f"le_{bound}"])
