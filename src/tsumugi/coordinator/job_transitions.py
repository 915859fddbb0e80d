"""The shard's changes of state: conditional updates, the reports that cause them, the events they leave.

Each ``to_*`` function runs inside the caller's transaction and returns the new row, or None when the job
was not in one of the source states (the race lost). A terminal move writes the job's run event and
notices with it (``record_terminal_events``). ``apply_report`` and ``apply_reports`` turn what the
consumer reports about an attempt into those moves; each returns the instant to arm the alarm at (or
None). Every move writes one line of the lifecycle log (``lifecycle_log``) when that log is on.
"""
# J-92, J-180, J-180a, J-180b, F-45, J-115, J-95, J-165

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Final

from tsumugi import telemetry
from tsumugi.coordinator import lifecycle_log
from tsumugi.coordinator.context import ShardContext
from tsumugi.coordinator.first_attempts import completed_row
from tsumugi.core import wire_format
from tsumugi.core.backoff import DEFAULT, RetryBackoff, backoff_from_wire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.states import (
    FAILURE_STATES,
    IN_FLIGHT_STATES,
    AttemptOutcome,
    Completed,
    JobState,
    ReportEffect,
    assert_transition,
    decide_report,
    outcome_from_wire,
)
from tsumugi.logging import jobs_log
from tsumugi.ports import SqlValue
from tsumugi.storage import tick_tables as lanes
from tsumugi.storage.event_outbox import RunEvent, RunJobEvent
from tsumugi.storage.job_rows import REPORT_COLUMNS, JobRow
from tsumugi.storage.job_table import Assignments, Settle
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
def apply_reports(
    ctx: ShardContext, reports: Sequence[tuple[str, Mapping[str, object]]], now_ms: int
) -> int | None:
    """Apply a batch of reports as if ``apply_report`` ran for each in turn (ADR-0106, ADR-0136).

    Each report arrives in its wire form and is decoded here, once. A first attempt that returned
    nothing, of a job this shard remembers dispatching, is written without reading its row (ADR-0181).
    The others take one read for the batch, and those that finish their job are written with one
    statement per chunk. Retries, and any job reported more than once in the batch, take
    ``apply_report`` one by one. Returns the instant to arm the alarm at (or None).
    """
    counts: dict[str, int] = {}
    for job_id, _ in reports:
        counts[job_id] = counts.get(job_id, 0) + 1
    remembered = ctx.first_attempts
    completed: list[JobRow] = []
    decoded: list[tuple[str, AttemptOutcome]] = []
    for job_id, wire in reports:
        outcome = outcome_from_wire(wire)
        dispatched = (
            remembered.take(job_id)
            if remembered is not None and outcome is _FIRST_RETURNED_NOTHING and counts[job_id] == 1
            else None
        )
        if dispatched is not None:
            completed.append(completed_row(job_id, dispatched))
        else:
            decoded.append((job_id, outcome))
    rows = {row["id"]: row for row in ctx.jobs.get_many([i for i, _ in decoded], REPORT_COLUMNS)}
    settled: list[tuple[JobRow, ReportEffect]] = []
    arms: list[int] = []
    for job_id, outcome in decoded:
        job = rows.get(job_id)
        if job is None:
            continue  # J-115: not in this shard
        if counts[job_id] > 1:
            arm_at = apply_report(ctx, job_id, outcome, now_ms, rows.pop(job_id, None))
            arms += [arm_at] if arm_at is not None else []
            continue
        # Only a failure reads the backoff (a retry's delay); a plain job's success never does.
        needs_backoff = not isinstance(outcome, Completed) or job["run_id"] is not None
        backoff = _backoff(job["backoff"]) if needs_backoff else DEFAULT
        effect = decide_report(job, outcome, now_ms, ctx.rand(), backoff)
        if effect is None:
            continue
        spawning = isinstance(outcome, Completed) and job["run_id"] is not None and bool(outcome.spawns)
        if effect.to_state == "SCHEDULED" or effect.log_state is not None or spawning:
            arm_at = apply_report(ctx, job_id, outcome, now_ms, job)  # the rarer paths, one by one
            arms += [arm_at] if arm_at is not None else []
            continue
        settled.append((job, effect))
    if settled or completed:
        changed, errors = _settle(ctx, settled, now_ms) if settled else ([], {})
        if completed:
            # J-115, ADR-0046: each must still be in flight on its first attempt; if one is not, this
            # raises, nothing is applied, and the reports are applied one at a time instead.
            ctx.jobs.complete_first_attempts([job["id"] for job in completed], IN_FLIGHT, now_ms)
        _settled(ctx, [*changed, *completed], errors, now_ms)
        arms.append(now_ms)  # J-165
    return min(arms) if arms else None


# A report that says its first attempt returned nothing and spawned nothing: ``outcome_from_wire`` gives
# the same value for each (from a cache: one it dropped takes the general path, to the same effect).
_FIRST_RETURNED_NOTHING: Final = outcome_from_wire({"ok": True, "attempt": 1})


def _settle(
    ctx: ShardContext, settled: list[tuple[JobRow, ReportEffect]], now_ms: int
) -> tuple[list[JobRow], dict[str, str]]:
    """Write finished reports together; their rows, and the errors of those that failed.

    ``settled`` pairs each job's row, read in this transaction, with what its report does. Every one of
    them moves (``settle_many`` checks it), and its row is then changed in place to what the statement
    left (ADR-0158, ADR-0176).
    """
    for to_state in {effect.to_state for _, effect in settled}:
        assert_transition(JobState.QUEUED, to_state)
    ctx.jobs.settle_many(
        [Settle(job["id"], effect.to_state, effect.attempts, effect.result) for job, effect in settled],
        IN_FLIGHT,
        now_ms,
    )
    changed: list[JobRow] = []
    for job, effect in settled:
        job["state"], job["attempts"], job["result"] = effect.to_state, effect.attempts, effect.result
        job["cancel_requested_at"] = None
        changed.append(job)
    return changed, {job["id"]: effect.error for job, effect in settled if effect.error is not None}


def _settled(ctx: ShardContext, changed: list[JobRow], errors: Mapping[str, str], now_ms: int) -> None:
    """What follows jobs that finished together: their marks, their terminal events, the log, the counts."""
    ctx.jobs.mark_changed_many(changed)
    run_events: list[RunEvent] = []
    for job in changed:
        error = errors.get(job["id"])
        record_terminal_events(ctx, job, now_ms, error=error, spawns=None, run_events=run_events)
    ctx.events.add_run_events(run_events)
    if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145: one level check for the batch
        lifecycle_log.settled(changed, now_ms, errors)
    if telemetry.active is not None:  # ADR-0143: each job counts, as one settled alone does
        moved: dict[str, int] = {}
        for job in changed:
            moved[job["state"]] = moved.get(job["state"], 0) + 1
        for state, count in moved.items():
            telemetry.active.jobs_moved(ctx.binding, state, count)


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
    effect = decide_report(job, outcome, now_ms, ctx.rand(), _backoff(job["backoff"]))
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
def _backoff(text: str) -> RetryBackoff:
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
