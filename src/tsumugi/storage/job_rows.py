"""Job row columns and the lane placement of each state (ADR-0042, ADR-0043)."""

from __future__ import annotations

from typing import Any, Final

from tsumugi.ports import Row

JobRow = dict[str, Any]

JOB_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "binding",
    "state",
    "priority",
    "attempts",
    "max_attempts",
    "concurrency_key",
    "unique_key",
    "guarantee",
    "timeout_ms",
    "backoff",
    "run_after",
    "created_at",
    "updated_at",
    "dispatched_at",
    "heartbeat_at",
    "progress",
    "payload",
    "result",
    "run_id",
    "node_id",
    "expires_at",
    "traceparent",
    "cancel_requested_at",
    "version",
)
JOB_SELECT: Final = ", ".join(JOB_COLUMNS)
# What applying a batch of reports reads of each job, and what a settled one gives back: the columns the
# decision, the terminal events and the lifecycle log use; never the payload or the lanes (ADR-0153).
REPORT_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "binding",
    "state",
    "attempts",
    "max_attempts",
    "backoff",
    "run_id",
    "node_id",
    "dispatched_at",
    "cancel_requested_at",
    "traceparent",
    "result",
)

MAX_BOUND_PARAMS: Final = 100  # Durable Object SQL binds at most 100 parameters per statement
SEQ_PER_MS: Final = 1000  # snapshot seq floor = now_ms * 1000: monotonic even if a job id is re-created


def chunks(values: list[str], size: int = MAX_BOUND_PARAMS) -> list[list[str]]:
    """Split an ``IN (...)`` list so no statement binds more parameters than DO SQL allows."""
    return [values[i : i + size] for i in range(0, len(values), size)]


def seq_floor(now_ms: int) -> int:
    """The smallest snapshot ``seq`` a change at ``now_ms`` may carry (ADR-0042)."""
    return now_ms * SEQ_PER_MS


def job_from_row(row: Row, columns: tuple[str, ...] = JOB_COLUMNS) -> JobRow:
    return dict(zip(columns, row, strict=True))


def scheduled_lane(run_after: int, priority: float, now_ms: int) -> tuple[int, float]:
    """``(ready, lane_at)`` of a SCHEDULED job: ready jobs sort by priority, waiting ones by time."""
    return (1, priority) if run_after <= now_ms else (0, run_after)
