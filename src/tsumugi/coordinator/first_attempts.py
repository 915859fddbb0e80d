"""What a shard remembers of the jobs it dispatched, so their first attempt's success needs no read back.

Most reports say a first attempt returned nothing. The rows those reports change are the rows the shard
dispatched moments before; what the report's terminal event and log line need of them never changes
while the job is in flight. ``FirstAttempts`` keeps that from the dispatch, and the report's write checks
in SQL that the job is still in flight on its first attempt (ADR-0181). Only the local runtime, whose
consumer reports in batches, turns it on.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.tick_tables import DispatchRow

MAX_REMEMBERED: Final = 20_000  # past this, what is remembered is dropped: the reports read it back


class Dispatched(NamedTuple):
    """The columns of a dispatched job a report reads that its flight never changes."""

    binding: str
    max_attempts: int
    backoff: str
    run_id: str | None
    node_id: str | None
    dispatched_at: int
    traceparent: str | None


class FirstAttempts:
    """The dispatched jobs of one shard by id, until their report takes them."""

    __slots__ = ("_jobs",)

    def __init__(self) -> None:
        self._jobs: dict[str, Dispatched] = {}

    def dispatched(self, jobs: list[DispatchRow], now_ms: int) -> None:
        """Remember those of ``jobs`` on their first attempt, dispatched at ``now_ms``: each was
        SCHEDULED and is QUEUED now."""
        remembered = self._jobs
        if len(remembered) + len(jobs) > MAX_REMEMBERED:
            remembered.clear()  # jobs that left their flight by another way than a batched report
        for job in jobs:
            if job.attempts:
                remembered.pop(job.id, None)  # a later attempt's report reads its row
                continue
            remembered[job.id] = Dispatched(
                job.binding, job.max_attempts, job.backoff, job.run_id, job.node_id, now_ms, job.traceparent
            )

    def take(self, job_id: str) -> Dispatched | None:
        """What was remembered of ``job_id``, forgotten now; None when nothing is."""
        return self._jobs.pop(job_id, None)


def completed_row(job_id: str, job: Dispatched) -> JobRow:
    """The report's row of a job its first attempt completed with no result, as the write left it."""
    return {
        "id": job_id,
        "binding": job.binding,
        "state": "COMPLETED",
        "attempts": 1,
        "max_attempts": job.max_attempts,
        "backoff": job.backoff,
        "run_id": job.run_id,
        "node_id": job.node_id,
        "dispatched_at": job.dispatched_at,
        "cancel_requested_at": None,
        "traceparent": job.traceparent,
        "result": None,
    }
