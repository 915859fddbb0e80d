"""The ``lane_at`` values a transition writes that depend on the row itself, named (ADR-0043).

The lane index orders every job (see ``shard_schema``): a ready job by priority, an in-flight one by when
its silence ends. Where that value is computed from the stored row, it is an expression over the *old*
row, evaluated by SQLite in the same ``UPDATE``; these are the only ones, so no SQL is written outside
``storage/``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tsumugi.ports import SqlValue


@dataclass(frozen=True, slots=True)
class RowExpression:
    """A column value SQLite computes from the row being updated, with its parameters."""

    sql: str
    params: tuple[SqlValue, ...] = ()


def by_priority() -> RowExpression:
    """A job that is ready: it sorts by its own priority."""
    return RowExpression("priority")


def silence_ends_after(now_ms: int) -> RowExpression:
    """Dispatched at ``now_ms``: its silence ends ``timeout_ms`` later."""
    # J-111
    return RowExpression("? + timeout_ms", (now_ms,))


def silence_ends_after_dispatch() -> RowExpression:
    """Claimed: the silence still counts from the dispatch (claiming does not move it)."""
    # J-111
    return RowExpression("dispatched_at + timeout_ms")


def silence_ends_after_heartbeat(now_ms: int) -> RowExpression:
    """A heartbeat at ``now_ms`` moves the silence's origin, never before a pending cancel."""
    # J-111, J-135
    return RowExpression(
        "CASE WHEN cancel_requested_at IS NULL THEN max(dispatched_at, ?) + timeout_ms "
        "ELSE min(max(dispatched_at, ?) + timeout_ms, cancel_requested_at) END",
        (now_ms, now_ms),
    )


def no_later_than(now_ms: int) -> RowExpression:
    """A cancel request at ``now_ms``: the reaper looks at the job by then at the latest."""
    # J-135
    return RowExpression("min(lane_at, ?)", (now_ms,))
