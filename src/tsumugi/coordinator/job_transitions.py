"""The shard's state changes as conditional updates, with their terminal events.

Each function runs inside the caller's transaction and returns the new row, or None when the job was
not in one of the source states (the race lost).
"""
# J-92, J-180b, F-45

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from tsumugi import telemetry
from tsumugi.coordinator.lifecycle_log import log_settled
from tsumugi.coordinator.shard_context import ShardContext
from tsumugi.coordinator.terminal_events import record_terminal_events
from tsumugi.core.states import IN_FLIGHT_STATES, JobState, assert_transition
from tsumugi.ports import SqlValue
from tsumugi.storage import lane_expressions as lanes
from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.job_store import Assignments

IN_FLIGHT: Final = tuple(sorted(IN_FLIGHT_STATES))  # ("QUEUED", "RUNNING")
_FROM_SCHEDULED: Final = (JobState.SCHEDULED,)
_ID_STATE: Final = ("id", "state")  # what marking a moved row reads of it


def _checked(from_states: Iterable[str], to_state: str) -> tuple[str, ...]:
    """The source states, each a legal move to ``to_state`` (a broken caller raises)."""
    # J-92
    states = tuple(from_states)
    for state in states:
        assert_transition(state, to_state)
    return states


def to_scheduled(
    ctx: ShardContext,
    job_id: str,
    from_states: Iterable[str],
    now_ms: int,
    *,
    run_after: int,
    priority: float | None = None,
    **fields: SqlValue,
) -> JobRow | None:
    """Into SCHEDULED; the lane (ready or waiting) follows ``run_after`` (ADR-0043).

    From SCHEDULED it is a reschedule (E12), not a transition.
    """
    states = tuple(from_states)
    if states != _FROM_SCHEDULED:
        _checked(states, JobState.SCHEDULED)
    ready = run_after <= now_ms
    assignments: Assignments = {
        "state": JobState.SCHEDULED,
        "run_after": run_after,
        "ready": int(ready),
        **fields,
    }
    if priority is not None:
        assignments["priority"] = priority
        assignments["lane_at"] = priority if ready else run_after
    else:
        assignments["lane_at"] = lanes.by_priority() if ready else run_after
    row = ctx.jobs.update(job_id, states, now_ms, assignments)
    if row is not None and telemetry.active is not None and states != _FROM_SCHEDULED:
        retried = not IN_FLIGHT_STATES.isdisjoint(states)  # an attempt failed; not an operator's retry
        telemetry.active.jobs_moved(ctx.binding, JobState.SCHEDULED, retried=retried)
    return row


def to_queued(ctx: ShardContext, job_id: str, now_ms: int) -> JobRow | None:
    """SCHEDULED -> QUEUED at dispatch (E2): the silence clock starts now."""
    # J-111
    row = ctx.jobs.update(
        job_id,
        _FROM_SCHEDULED,
        now_ms,
        {
            "state": JobState.QUEUED,
            "ready": 0,
            "dispatched_at": now_ms,
            "lane_at": lanes.silence_ends_after(now_ms),
        },
    )
    if row is not None and telemetry.active is not None:
        telemetry.active.jobs_dispatched(ctx.binding, [now_ms - row["run_after"]])
    return row


def to_queued_many(ctx: ShardContext, jobs: list[JobRow], now_ms: int) -> list[JobRow]:
    """``to_queued`` for a tick's dispatches, in one statement per chunk.

    ``jobs`` are the rows as read in this transaction; returns those that moved, in their order, as they
    were read (the statement returns only id and state, ADR-0158).
    """
    moved = ctx.jobs.update_many(
        [job["id"] for job in jobs],
        _FROM_SCHEDULED,
        now_ms,
        {
            "state": JobState.QUEUED,
            "ready": 0,
            "dispatched_at": now_ms,
            "lane_at": lanes.silence_ends_after(now_ms),
        },
        _ID_STATE,
    )
    queued = [job for job in jobs if job["id"] in moved]
    if queued and telemetry.active is not None:  # ADR-0143: queue lag, from run_after to the dispatch
        telemetry.active.jobs_dispatched(ctx.binding, [now_ms - job["run_after"] for job in queued])
    return queued


def to_running(ctx: ShardContext, job_id: str, now_ms: int) -> JobRow | None:
    """QUEUED -> RUNNING by the claim (E3); the silence origin stays ``dispatched_at``."""
    # J-111
    row = ctx.jobs.update(
        job_id,
        (JobState.QUEUED,),
        now_ms,
        {"state": JobState.RUNNING, "lane_at": lanes.silence_ends_after_dispatch()},
    )
    if row is not None and telemetry.active is not None:
        telemetry.active.jobs_moved(ctx.binding, JobState.RUNNING)
    return row


def to_terminal(
    ctx: ShardContext,
    job_id: str,
    from_states: Iterable[str],
    to_state: str,
    now_ms: int,
    *,
    error: str | None = None,
    spawns: Sequence[object] | None = None,
    **fields: SqlValue,
) -> JobRow | None:
    """Into COMPLETED, FAILED, CANCELLED or STALLED; notices and run events are written with it."""
    assignments: Assignments = {"state": to_state, "ready": 0, "lane_at": now_ms, **fields}
    row = ctx.jobs.update(job_id, _checked(from_states, to_state), now_ms, assignments)
    if row is not None:
        record_terminal_events(ctx, row, now_ms, error=error, spawns=spawns)
        log_settled((row,), now_ms, {job_id: error})  # ADR-0145
        if telemetry.active is not None:
            telemetry.active.jobs_moved(ctx.binding, to_state)
    return row
