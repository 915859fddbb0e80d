"""Job row columns, the lane placement of each state, and SQL values read as their columns' types.

The SQL edge narrows a value once (``integer``, ``optional_integer``, ...); code past it is typed
(ADR-0042, ADR-0043).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, NotRequired, TypedDict

from tsumugi.core.states import JobStateName
from tsumugi.ports import Row, SqlValue


class JobRow(TypedDict):
    """One ``job`` row as a plain dict (zero cost on the hot path).

    The ``REPORT_COLUMNS`` are in every row read; the others are absent from a report's narrower read.
    JSON columns (``backoff``, ``payload``, ``result``) hold their text.
    """

    id: str
    binding: str
    state: JobStateName
    attempts: int
    max_attempts: int
    backoff: str
    run_id: str | None
    node_id: str | None
    dispatched_at: int | None
    cancel_requested_at: int | None
    traceparent: str | None
    result: str | None
    priority: NotRequired[float]
    concurrency_key: NotRequired[str | None]
    unique_key: NotRequired[str | None]
    guarantee: NotRequired[str]
    timeout_ms: NotRequired[int]
    run_after: NotRequired[int]
    created_at: NotRequired[int]
    updated_at: NotRequired[int]
    heartbeat_at: NotRequired[int | None]
    progress: NotRequired[float | None]
    payload: NotRequired[str]
    expires_at: NotRequired[int | None]
    version: NotRequired[int]


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


# ``dict`` itself, typed as what it builds here: a row read with the columns the schema gives those types
# (``shard_schema``). The one place a SQL row becomes a ``JobRow``, with no per-row cost.
_job_dict: Final[Callable[[Iterable[tuple[str, SqlValue]]], JobRow]] = dict  # type: ignore[assignment]


def job_from_row(row: Row, columns: tuple[str, ...] = JOB_COLUMNS) -> JobRow:
    """A job row from ``SELECT`` of ``columns`` (every column, or ``REPORT_COLUMNS``)."""
    return _job_dict(zip(columns, row, strict=True))


def scheduled_lane(run_after: int, priority: float, now_ms: int) -> tuple[int, float]:
    """``(ready, lane_at)`` of a SCHEDULED job: ready jobs sort by priority, waiting ones by time."""
    return (1, priority) if run_after <= now_ms else (0, run_after)


def literal_list(values: Iterable[str]) -> str:
    """A fixed SQL ``IN`` list of string literals (``('FAILED', 'STALLED')``), for constant state sets.

    A partial index's ``WHERE state IN (...)`` matches only literals, never bound parameters.
    """
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


def integer(value: SqlValue) -> int:
    """An INTEGER column's value (Durable Object SQL may hand a whole number over as a float)."""
    if isinstance(value, int | float):
        return int(value)
    raise TypeError(f"expected a number from SQL, read {value!r}")


def integer_or_real(value: SqlValue) -> int | float:
    """A REAL (or INTEGER) column's value."""
    if isinstance(value, int | float):
        return value
    raise TypeError(f"expected a number from SQL, read {value!r}")


def optional_integer(value: SqlValue) -> int | None:
    """``integer`` of a nullable column."""
    return None if value is None else integer(value)
