"""A shard's job row: its columns, the ``JobRow`` a SQL row of them becomes, and the values derived from
a row (its snapshot ``seq`` floor, a scheduled job's lane).

The SQL edge narrows a value once (``sql_values``); code past it is typed (ADR-0042, ADR-0043). The
writes are in ``job_table``.
"""
# J-30

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NotRequired, TypedDict

from tsumugi.core.states import JobStateName
from tsumugi.ports import Row


class JobRow(TypedDict):
    """One ``job`` row as a plain dict (zero cost on the hot path).

    Most reads hold every column; a report's read holds only the ``REPORT_COLUMNS``. JSON columns
    (``backoff``, ``payload``, ``result``) hold their text.
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


JOB_COLUMNS: Final[tuple[str, ...]] = tuple(
    "id binding state priority attempts max_attempts concurrency_key unique_key guarantee "
    "timeout_ms backoff run_after created_at updated_at dispatched_at heartbeat_at progress "
    "payload result run_id node_id expires_at traceparent cancel_requested_at version".split()
)
JOB_SELECT: Final = ", ".join(JOB_COLUMNS)
# What applying a batch of reports reads of each job, and what a settled one gives back: the columns the
# decision, the terminal events and the lifecycle log use; never the payload or the lanes (ADR-0153).
REPORT_COLUMNS: Final[tuple[str, ...]] = tuple(
    "id binding state attempts max_attempts backoff run_id node_id dispatched_at "
    "cancel_requested_at traceparent result".split()
)


SEQ_PER_MS: Final = 1000  # snapshot seq floor = now_ms * 1000: monotonic even if a job id is re-created


def seq_floor(now_ms: int) -> int:
    """The smallest snapshot ``seq`` a change at ``now_ms`` may carry (ADR-0042)."""
    return now_ms * SEQ_PER_MS


def _row_reader(columns: tuple[str, ...]) -> Callable[[Row], JobRow]:
    """The function that makes a ``JobRow`` of a row ``SELECT``ed as ``columns``.

    It is one dict display, ``{"id": row[0], ...}``, made once from the column names: it builds a report's
    row in a third of the time ``dict(zip(columns, row))`` takes (ADR-0176). The row holds the values the
    schema gives those columns (``shard_schema``), so the dict is the ``JobRow`` as it is.
    """
    assert all(name.isidentifier() for name in columns), columns  # our own column names, never input
    display = ", ".join(f"{name!r}: row[{index}]" for index, name in enumerate(columns))
    reader: Callable[[Row], JobRow] = eval(f"lambda row: {{{display}}}")
    return reader


_READERS: Final[dict[tuple[str, ...], Callable[[Row], JobRow]]] = {}


def row_reader(columns: tuple[str, ...]) -> Callable[[Row], JobRow]:
    """The function that makes ``JobRow``s of rows ``SELECT``ed as ``columns``, made once per column list."""
    reader = _READERS.get(columns)
    if reader is None:
        reader = _READERS[columns] = _row_reader(columns)
    return reader


def job_from_row(row: Row, columns: tuple[str, ...] = JOB_COLUMNS) -> JobRow:
    """A job row from ``SELECT`` of ``columns`` (every column, or ``REPORT_COLUMNS``)."""
    return row_reader(columns)(row)


def scheduled_lane(run_after: int, priority: float, now_ms: int) -> tuple[int, float]:
    """``(ready, lane_at)`` of a SCHEDULED job: ready jobs sort by priority, waiting ones by time."""
    return (1, priority) if run_after <= now_ms else (0, run_after)
