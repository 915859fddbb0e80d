"""The shard's changes of state: conditional updates, the reports that cause them, the events they leave.

Each ``to_*`` function runs inside the caller's transaction and returns the new row, or None when the job
was not in one of the source states (the race lost). A terminal move writes the job's run event and
notices with it (``record_terminal_events``). ``apply_report`` turns what the consumer reports about an
attempt into those moves (``report_batches.apply_reports`` a batch of them) and returns the instant to
arm the alarm at (or None). Every move writes one line of the lifecycle log (``lifecycle_log``) when
that log is on.
"""
# J-92, J-180, J-180a, J-180b, F-45, J-115, J-95, J-165

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Final

from tsumugi import telemetry
from tsumugi.coordinator import lifecycle_log
from tsumugi.coordinator.context import ShardContext
from tsumugi.core import wire_format
from tsumugi.core.backoff import RetryBackoff, backoff_from_wire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.states import (
    FAILURE_STATES,
    IN_FLIGHT_STATES,
    AttemptOutcome,
    Completed,
    JobState,
    assert_transition,
    decide_report,
)
from tsumugi.logging import jobs_log
from tsumugi.ports import SqlValue
from tsumugi.storage import tick_tables as lanes
from tsumugi.storage.event_outbox import RunEvent, RunJobEvent
from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.job_table import Assignments
from tsumugi.storage.tick_tables import DispatchRow

IN_FLIGHT: Final = tuple(sorted(IN_FLIGHT_STATES))  # ("QUEUED", "RUNNING")
EXPIRED_ERROR: Final = "job expired"  # J-41: the text is undocumented; ours, recorded in ADR-0047
_FROM_SCHEDULED: Final = (JobState.SCHEDULED,)


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


def to_queued_many(ctx: ShardContext, jobs: list[DispatchRow], now_ms: int) -> list[DispatchRow]:
    """SCHEDULED -> QUEUED at dispatch (E2) for a tick's dispatches, in one statement per chunk.

    The silence clock starts now.

    ``jobs`` are the rows as read in this transaction, every one SCHEDULED, so every one moves
    (``update_many`` checks it); they are returned as they were read (ADR-0158).
    """
    ctx.jobs.update_many(
        [job.id for job in jobs],
        _FROM_SCHEDULED,
        now_ms,
        {
            "state": JobState.QUEUED,
            "ready": 0,
            "dispatched_at": now_ms,
            "lane_at": lanes.silence_ends_after(now_ms),
        },
    )
    if ctx.first_attempts is not None:  # ADR-0181
        ctx.first_attempts.dispatched(jobs, now_ms)
    if jobs and telemetry.active is not None:  # ADR-0143: queue lag, from run_after to the dispatch
        telemetry.active.jobs_dispatched(ctx.binding, [now_ms - job.run_after for job in jobs])
    return jobs


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
        if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145
            lifecycle_log.settled((row,), now_ms, {job_id: error})
        if telemetry.active is not None:
            telemetry.active.jobs_moved(ctx.binding, to_state)
    return row


# ------------------------------------------------------------------ reports (J-115, J-95, J-165)
def apply_report(
    ctx: ShardContext,
    job_id: str,
    outcome: AttemptOutcome,
    now_ms: int,
    job: JobRow | None = None,
) -> int | None:
    """Apply one attempt's outcome (``outcome_from_wire`` of the report); ignored when not in flight or
    stale (ADR-0046).

    ``job``: the job's current row when the caller already read it (``report_many``, ADR-0106); the
    ``REPORT_COLUMNS`` are enough.
    """
    # J-115
    if job is None:
        job = ctx.jobs.get(job_id)
    if job is None:
        return None
    effect = decide_report(job, outcome, now_ms, ctx.rand(), stored_backoff(job["backoff"]))
    if effect is None:
        return None
    if effect.log_state is not None:  # J-95: before the transition, so the same snapshot carries it
        ctx.attempts.record(
            job_id, effect.attempts, effect.log_state, job["dispatched_at"], now_ms, effect.error
        )
    if effect.to_state == "SCHEDULED":
        assert effect.run_after is not None
        to_scheduled(
            ctx,
            job_id,
            IN_FLIGHT,
            now_ms,
            run_after=effect.run_after,
            attempts=effect.attempts,
            dispatched_at=None,
        )
        if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145
            lifecycle_log.retrying(job, effect.attempts, now_ms, effect.run_after, effect.error)
        # ADR-0047: arm at once, so the freed slot is reused and the failure projected without delay.
        return now_ms
    # F-55: only run jobs spawn
    spawns = outcome.spawns if isinstance(outcome, Completed) and job["run_id"] is not None else None
    to_terminal(
        ctx,
        job_id,
        IN_FLIGHT,
        effect.to_state,
        now_ms,
        error=effect.error,
        spawns=list(spawns) if spawns else None,
        attempts=effect.attempts,
        result=effect.result,
    )
    return now_ms  # J-165


@lru_cache(maxsize=64)  # a shard's jobs share a handful of backoffs, most the default: decode each once
def stored_backoff(text: str) -> RetryBackoff:
    """A job's ``backoff`` column, decoded."""
    wire = wire_format.loads(text)
    return backoff_from_wire(wire if isinstance(wire, dict) else None)


# ------------------------------------------------------------------ terminal events (F-45, J-180)
def record_terminal_events(
    ctx: ShardContext,
    job: JobRow,
    now_ms: int,
    *,
    error: str | None,
    spawns: Sequence[object] | None,
    run_events: list[RunEvent] | None = None,
) -> None:
    """Write the run event and the notices of a job that just reached a terminal state.

    With ``run_events``, the run event is appended there for the caller to write with others.
    """
    state = job["state"]
    failure_target, settled_target = _notice_targets(ctx, job)
    if job["run_id"] is None and failure_target is None and settled_target is None:
        return  # nothing to write, so the last error need not be read (ADR-0105)
    # A first attempt that completed has no attempt row to read (J-95 writes one only after a failure).
    first_success = state == "COMPLETED" and job["attempts"] <= 1
    last_error = error if error is not None or first_success else ctx.attempts.last_error(job["id"])
    if job["run_id"] is not None:
        event: RunJobEvent = {
            "nodeId": job["node_id"],
            "jobId": job["id"],
            "state": state,
            "result": job["result"],
            "error": last_error,
        }
        if spawns and state == "COMPLETED":
            event["spawns"] = spawns
        if run_events is None:
            ctx.events.add_run_event(job["run_id"], event)
        else:
            run_events.append((job["run_id"], event))
    base: JsonObject = {
        "jobId": job["id"],
        "binding": job["binding"],
        "state": state,
        "attempts": job["attempts"],
        "maxAttempts": job["max_attempts"],
        "runId": job["run_id"],
        "nodeId": job["node_id"],
    }
    if failure_target is not None:
        _add(ctx, job, failure_target, {**base, "error": last_error, "failedAt": now_ms})
    if settled_target is not None:
        settled = {
            **base,
            "error": last_error if state in FAILURE_STATES else None,
            "result": wire_format.loads(job["result"]) if state == "COMPLETED" and job["result"] else None,
            "settledAt": now_ms,
        }
        _add(ctx, job, settled_target, settled)


def _notice_targets(ctx: ShardContext, job: JobRow) -> tuple[str | None, str | None]:
    """The bindings that get an ``onFailure`` and an ``onSettled`` notice of ``job`` (or None)."""
    settings = ctx.settings
    state, binding = job["state"], job["binding"]
    on_failure, on_settled = settings.on_failure, settings.on_settled
    failure: str | None = None
    if on_failure and state in FAILURE_STATES and binding != on_failure:  # J-180: no loops
        failure = on_failure
    settled: str | None = None
    if (
        on_settled is not None
        and state in on_settled.states
        and binding not in (on_settled.binding, on_failure)
    ):
        settled = on_settled.binding  # J-180a
    return failure, settled


def _add(ctx: ShardContext, job: JobRow, target: str, payload: JsonObject) -> None:
    # A fixed id per notice makes redelivery idempotent: the target shard returns the existing job (J-38).
    notice_id = wire_format.format_job_id(target, 0, wire_format.new_local_id())
    ctx.events.add_notice(target, notice_id, payload, job["traceparent"])  # J-40: the trace goes on
