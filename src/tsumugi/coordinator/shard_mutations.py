"""Operator mutations: manual retry, cancel (incl. cooperative cancel), reschedule.

Each function runs inside one transaction and returns ``(result, arm_at)``.
"""
# J-135, J-130..J-135

from __future__ import annotations

from typing import Final

from tsumugi.coordinator.context import ShardContext
from tsumugi.coordinator.job_transitions import IN_FLIGHT, to_scheduled, to_terminal
from tsumugi.coordinator.mutation_result import DONE, GONE, INVALID_STATE, REQUESTED, MutationResult
from tsumugi.core.states import RETRYABLE_STATES, JobState
from tsumugi.storage import lane_queries as lanes

_RETRYABLE: Final = tuple(sorted(RETRYABLE_STATES))  # ("FAILED", "STALLED")


def apply_retry(ctx: ShardContext, job_id: str, now_ms: int) -> tuple[MutationResult, int | None]:
    """FAILED/STALLED -> SCHEDULED now, attempts kept (E11)."""
    # J-132
    job = ctx.jobs.get(job_id)
    if job is None:
        return GONE, None
    row = to_scheduled(ctx, job_id, _RETRYABLE, now_ms, run_after=now_ms, dispatched_at=None)
    return (DONE, now_ms) if row is not None else (INVALID_STATE, None)


def apply_cancel(ctx: ShardContext, job_id: str, now_ms: int) -> tuple[MutationResult, int | None]:
    """SCHEDULED (and unclaimed at-most-once) -> CANCELLED now; QUEUED/RUNNING records a request."""
    job = ctx.jobs.get(job_id)
    if job is None:
        return GONE, None
    state = job["state"]
    unclaimed_at_most_once = state == JobState.QUEUED and job["guarantee"] == "at-most-once"
    if state == JobState.SCHEDULED or unclaimed_at_most_once:  # E10; J-135: the later claim loses
        row = to_terminal(ctx, job_id, (state,), JobState.CANCELLED, now_ms)
        return (DONE, now_ms) if row is not None else (INVALID_STATE, None)
    if state in IN_FLIGHT:
        if job["cancel_requested_at"] is None:
            ctx.jobs.update(
                job_id,
                IN_FLIGHT,
                now_ms,
                {"cancel_requested_at": now_ms, "lane_at": lanes.no_later_than(now_ms)},
                transition=False,
            )
        grace = ctx.settings.policy.reaper_grace_ms
        return REQUESTED, (job["cancel_requested_at"] or now_ms) + grace
    return INVALID_STATE, None


def apply_reschedule(
    ctx: ShardContext,
    job_id: str,
    run_at: int | None,
    delay_ms: int | None,
    priority: float | None,
    now_ms: int,
) -> tuple[MutationResult, int | None]:
    """SCHEDULED only: new ``run_after`` and optionally ``priority`` (E12)."""
    # J-133
    job = ctx.jobs.get(job_id)
    if job is None:
        return GONE, None
    run_after = int(run_at) if run_at is not None else now_ms + int(delay_ms or 0)
    row = to_scheduled(ctx, job_id, (JobState.SCHEDULED,), now_ms, run_after=run_after, priority=priority)
    return (DONE, min(run_after, now_ms)) if row is not None else (INVALID_STATE, None)
