"""The shard's changes of state: conditional updates, the events they leave and their log lines.

Each ``to_*`` function runs inside the caller's transaction and returns the new row, or None when the job
was not in one of the source states (the race lost). A terminal move writes the job's run event and
notices with it (``record_terminal_events``). Every move writes one INFO line of the lifecycle log
(ADR-0145); callers that move many jobs at once check ``enabled()`` once for the batch, so a disabled
``tsumugi.jobs`` logger costs one level check per batch and builds no line.
"""
# J-92, J-180, J-180a, J-180b, F-45

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from tsumugi import telemetry
from tsumugi.coordinator.context import ShardContext
from tsumugi.core import ids, jsonwire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.states import FAILURE_STATES, IN_FLIGHT_STATES, JobState, assert_transition
from tsumugi.logging import jobs_log, log_event
from tsumugi.ports import SqlValue
from tsumugi.storage import lane_queries as lanes
from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.job_store import Assignments
from tsumugi.storage.outboxes import RunEvent, RunJobEvent

IN_FLIGHT: Final = tuple(sorted(IN_FLIGHT_STATES))  # ("QUEUED", "RUNNING")
EXPIRED_ERROR: Final = "job expired"  # J-41: the text is undocumented; ours, recorded in ADR-0047
ERROR_CHARS: Final = 200  # a log line carries the error's last line, cut short; the job keeps it whole
_FROM_SCHEDULED: Final = (JobState.SCHEDULED,)
_ID_STATE: Final = ("id", "state")  # what marking a moved row reads of it
_TERMINAL_EVENTS: Final = {
    "COMPLETED": "job succeeded",
    "FAILED": "job failed",
    "CANCELLED": "job cancelled",
    "STALLED": "job stalled",
}


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


def to_queued_many(ctx: ShardContext, jobs: list[JobRow], now_ms: int) -> list[JobRow]:
    """SCHEDULED -> QUEUED at dispatch (E2) for a tick's dispatches, in one statement per chunk.

    The silence clock starts now.

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
            "result": jsonwire.loads(job["result"]) if state == "COMPLETED" and job["result"] else None,
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
    notice_id = ids.format_job_id(target, 0, ids.new_local_id())
    ctx.events.add_notice(target, notice_id, payload, job["traceparent"])  # J-40: the trace goes on


# ------------------------------------------------------------------ the lifecycle log (ADR-0145)
def enabled(level: int = logging.INFO) -> bool:
    return jobs_log.isEnabledFor(level)


def error_summary(error: str | None) -> str | None:
    """The last non-empty line of an error text (a traceback ends with ``Type: message``), cut short."""
    if not error:
        return None
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else error.strip()
    return last if len(last) <= ERROR_CHARS else last[: ERROR_CHARS - 1] + "…"


def log_enqueued(jobs: Iterable[JobRow], now_ms: int) -> None:
    """``job enqueued`` for each new row; ``delay_ms`` when it waits to run."""
    if not enabled():
        return
    for job in jobs:
        delay_ms = job["run_after"] - now_ms
        log_event(
            jobs_log,
            logging.INFO,
            "job enqueued",
            binding=job["binding"],
            job=job["id"],
            max_attempts=job["max_attempts"],
            delay_ms=delay_ms if delay_ms > 0 else None,
            run=job["run_id"],
        )


def log_enqueued_ids(binding: str, job_ids: Iterable[str]) -> None:
    """``job enqueued`` for new jobs with every option at its default."""
    if not enabled():
        return
    for job_id in job_ids:
        log_event(jobs_log, logging.INFO, "job enqueued", binding=binding, job=job_id)


def log_dispatched(jobs: Iterable[JobRow]) -> None:
    """``job dispatched`` with the attempt about to run, ``attempt`` of ``max_attempts``."""
    if not enabled():
        return
    for job in jobs:
        log_event(
            jobs_log,
            logging.INFO,
            "job dispatched",
            binding=job["binding"],
            job=job["id"],
            attempt=job["attempts"] + 1,
            max_attempts=job["max_attempts"],
        )


def log_retrying(job: JobRow, attempts: int, now_ms: int, run_after: int, error: str | None) -> None:
    """``job retrying``: the next attempt (``attempt`` of ``max_attempts``) runs ``in_ms`` from now."""
    if not enabled():
        return
    log_event(
        jobs_log,
        logging.INFO,
        "job retrying",
        binding=job["binding"],
        job=job["id"],
        attempt=attempts + 1,
        max_attempts=job["max_attempts"],
        in_ms=max(0, run_after - now_ms),
        error=error_summary(error) if error is not None else "no report before the silence timeout",
    )


def log_settled(jobs: Iterable[JobRow], now_ms: int, errors: Mapping[str, str | None]) -> None:
    """``job succeeded`` (``duration_ms`` from dispatch to report), ``failed``, ``cancelled``, ``stalled``."""
    if not enabled():
        return
    for job in jobs:
        state = job["state"]
        dispatched_at = job["dispatched_at"]
        duration_ms = now_ms - dispatched_at if state == "COMPLETED" and dispatched_at is not None else None
        log_event(
            jobs_log,
            logging.INFO,
            _TERMINAL_EVENTS.get(state, f"job {state.lower()}"),
            binding=job["binding"],
            job=job["id"],
            attempt=job["attempts"],
            max_attempts=job["max_attempts"],
            duration_ms=duration_ms,
            run=job["run_id"],
            error=error_summary(errors.get(job["id"])),
        )


def log_tick(shard: str, now_ms: int, dispatched: int, decided: int, next_alarm_at: int | None) -> None:
    """``shard tick`` at DEBUG: what one alarm did, and when the next one is due."""
    if not enabled(logging.DEBUG):
        return
    log_event(
        jobs_log,
        logging.DEBUG,
        "shard tick",
        shard=shard,
        dispatched=dispatched,
        decided=decided,
        next_in_ms=next_alarm_at - now_ms if next_alarm_at is not None else None,
    )
