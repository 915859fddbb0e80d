"""What the consumer tells the shard: report, heartbeat, claim, expire.

Each function runs inside one transaction and returns the instant to arm the alarm at (or None).
"""
# J-66, J-95, J-107, J-119, J-41

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Final

from tsumugi.coordinator.context import ShardContext
from tsumugi.coordinator.job_transitions import (
    EXPIRED_ERROR,
    IN_FLIGHT,
    log_retrying,
    log_settled,
    record_terminal_events,
    to_running,
    to_scheduled,
    to_terminal,
)
from tsumugi.core import jsonwire
from tsumugi.core.backoff import DEFAULT, RetryBackoff, backoff_from_wire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.outcome import (
    AttemptOutcome,
    Completed,
    ReportEffect,
    decide_report,
    is_stale,
    outcome_from_wire,
)
from tsumugi.core.progress import normalize_progress
from tsumugi.core.states import JobState, assert_transition
from tsumugi.storage import lane_queries as lanes
from tsumugi.storage.job_rows import REPORT_COLUMNS, JobRow
from tsumugi.storage.job_store import Assignments, Settle
from tsumugi.storage.outboxes import RunEvent

# J-41: an expiry cancels a job in any of the ACTIVE_STATES (in the order the statement binds them)
_ACTIVE: Final = (JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING)


def apply_reports(
    ctx: ShardContext, reports: Sequence[tuple[str, Mapping[str, object]]], now_ms: int
) -> int | None:
    """Apply a batch of reports as if ``apply_report`` ran for each in turn (ADR-0106, ADR-0136).

    Each report arrives in its wire form and is decoded here, once. One read for the batch; the reports
    that finish their job are written with one statement per chunk. Retries, and any job reported more
    than once in the batch, take ``apply_report`` one by one. Returns the instant to arm the alarm at
    (or None).
    """
    counts: dict[str, int] = {}
    for job_id, _ in reports:
        counts[job_id] = counts.get(job_id, 0) + 1
    rows = {row["id"]: row for row in ctx.jobs.get_many(list(counts), REPORT_COLUMNS)}
    settled: list[tuple[JobRow, ReportEffect]] = []
    arms: list[int] = []
    for job_id, wire in reports:
        job = rows.get(job_id)
        if job is None:
            continue  # J-115: not in this shard
        outcome = outcome_from_wire(wire)
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
    if settled:
        _settle(ctx, settled, now_ms)
        arms.append(now_ms)  # J-165
    return min(arms) if arms else None


def _settle(ctx: ShardContext, settled: list[tuple[JobRow, ReportEffect]], now_ms: int) -> None:
    """Write finished reports together: the transitions, their marks and their terminal events.

    ``settled`` pairs each job's row, read in this transaction, with what its report does; the rows of
    the jobs that moved are those rows as the statement left them (ADR-0158).
    """
    for to_state in {effect.to_state for _, effect in settled}:
        assert_transition(JobState.QUEUED, to_state)
    moved = ctx.jobs.settle_many(
        [Settle(job["id"], effect.to_state, effect.attempts, effect.result) for job, effect in settled],
        IN_FLIGHT,
        now_ms,
    )
    changed: list[JobRow] = []
    errors: dict[str, str | None] = {}
    for job, effect in settled:
        if job["id"] in moved:
            row: JobRow = {**job, "cancel_requested_at": None}
            row["state"], row["attempts"], row["result"] = effect.to_state, effect.attempts, effect.result
            changed.append(row)
            errors[job["id"]] = effect.error
    ctx.jobs.mark_changed_many(changed)
    run_events: list[RunEvent] = []
    for job in changed:
        record_terminal_events(ctx, job, now_ms, error=errors[job["id"]], spawns=None, run_events=run_events)
    ctx.events.add_run_events(run_events)
    log_settled(changed, now_ms, errors)  # ADR-0145: one level check for the batch


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
        log_retrying(job, effect.attempts, now_ms, effect.run_after, effect.error)  # ADR-0145
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


def apply_heartbeat(
    ctx: ShardContext, job_id: str, progress: object, attempt: object, now_ms: int
) -> JsonObject:
    """only QUEUED/RUNNING jobs; moves the reaper's silence origin to now."""
    # J-111, J-66
    job = ctx.jobs.get(job_id)
    if job is None:
        return {"ok": False, "cancelRequested": False}
    if job["state"] == "CANCELLED":  # the performer should stop: the job is gone for good
        return {"ok": False, "cancelRequested": True}
    if job["state"] not in IN_FLIGHT or is_stale(job, attempt):
        return {"ok": False, "cancelRequested": False}
    assignments: Assignments = {
        "heartbeat_at": now_ms,
        "lane_at": lanes.silence_ends_after_heartbeat(now_ms),
    }
    value = normalize_progress(progress)  # J-67: no progress leaves the stored value
    if value is not None:
        assignments["progress"] = value
    ctx.jobs.update(job_id, IN_FLIGHT, now_ms, assignments, transition=False)
    return {"ok": True, "cancelRequested": job["cancel_requested_at"] is not None}


@lru_cache(maxsize=64)  # a shard's jobs share a handful of backoffs, most the default: decode each once
def _backoff(text: str) -> RetryBackoff:
    wire = jsonwire.loads(text)
    return backoff_from_wire(wire if isinstance(wire, dict) else None)


def apply_claim(ctx: ShardContext, job_id: str, now_ms: int) -> bool:
    """QUEUED -> RUNNING; exactly one caller wins."""
    # J-107
    return to_running(ctx, job_id, now_ms) is not None


def apply_expire(ctx: ShardContext, job_id: str, now_ms: int) -> bool:
    """The consumer found the job past ``expires_at``: CANCELLED without running."""
    # J-41
    job = ctx.jobs.get(job_id)
    if job is None or job["expires_at"] is None:
        return False
    row = to_terminal(ctx, job_id, _ACTIVE, JobState.CANCELLED, now_ms, error=EXPIRED_ERROR)
    return row is not None
