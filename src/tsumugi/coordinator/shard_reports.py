"""What the consumer tells the shard: report, heartbeat, claim, expire.

Each function runs inside one transaction and returns the instant to arm the alarm at (or None).
"""
# J-66, J-95, J-107, J-119, J-41

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tsumugi.coordinator.job_transitions import IN_FLIGHT, to_running, to_scheduled, to_terminal
from tsumugi.coordinator.lifecycle_log import log_retrying, log_settled
from tsumugi.coordinator.shard_context import ShardContext
from tsumugi.coordinator.terminal_events import EXPIRED_ERROR, record_terminal_events
from tsumugi.core import jsonwire
from tsumugi.core.outcome import ReportedJob, decide_report, is_stale
from tsumugi.core.progress import normalize_progress
from tsumugi.core.states import assert_transition
from tsumugi.storage import lane_expressions as lanes
from tsumugi.storage.job_rows import REPORT_COLUMNS, JobRow, job_from_row, seq_floor

# Reports of a batch settled in one statement per chunk: 4 parameters a row beside 5 shared ones (3 values
# and the 2 in-flight states), within the 100 that Durable Object SQL binds (ADR-0136).
_SETTLE_ROWS = (100 - 5) // 4
_SETTLE_SQL = (
    "UPDATE job SET state = v.column2, attempts = v.column3, result = v.column4, ready = 0, lane_at = ?, "
    "updated_at = ?, heartbeat_at = NULL, progress = NULL, cancel_requested_at = NULL, "
    "version = max(version + 1, ?) FROM (VALUES {values}) AS v "
    "WHERE job.id = v.column1 AND +job.state IN (?, ?) RETURNING {columns}"
)


_SETTLED_RETURNING = ", ".join(f"job.{column}" for column in REPORT_COLUMNS)


def apply_reports(
    ctx: ShardContext, reports: Sequence[tuple[str, Mapping[str, Any]]], now_ms: int
) -> int | None:
    """Apply a batch of reports as if ``apply_report`` ran for each in turn (ADR-0106, ADR-0136).

    One read for the batch; the reports that finish their job are written with one statement per chunk.
    Retries, and any job reported more than once in the batch, take ``apply_report`` one by one.
    Returns the instant to arm the alarm at (or None).
    """
    counts: dict[str, int] = {}
    for job_id, _ in reports:
        counts[job_id] = counts.get(job_id, 0) + 1
    rows = {row["id"]: row for row in ctx.jobs.get_many(list(counts), REPORT_COLUMNS)}
    settled: list[tuple[str, Any, Mapping[str, Any]]] = []
    arms: list[int] = []
    for job_id, outcome in reports:
        job = rows.get(job_id)
        if job is None:
            continue  # J-115: not in this shard
        if counts[job_id] > 1:
            arm_at = apply_report(ctx, job_id, outcome, now_ms, rows.pop(job_id, None))
            arms += [arm_at] if arm_at is not None else []
            continue
        # Only a failure reads the backoff (a retry's delay); a plain job's success never does.
        needs_backoff = not outcome.get("ok") or job["run_id"] is not None
        effect = decide_report(_reported(job, with_backoff=needs_backoff), outcome, now_ms, ctx.rand())
        if effect is None:
            continue
        spawning = job["run_id"] is not None and bool(outcome.get("spawns"))
        if effect.to_state == "SCHEDULED" or effect.log_state is not None or spawning:
            arm_at = apply_report(ctx, job_id, outcome, now_ms, job)  # the rarer paths, one by one
            arms += [arm_at] if arm_at is not None else []
            continue
        settled.append((job_id, effect, outcome))
    if settled:
        _settle(ctx, settled, now_ms)
        arms.append(now_ms)  # J-165
    return min(arms) if arms else None


def _settle(ctx: ShardContext, settled: list[tuple[str, Any, Mapping[str, Any]]], now_ms: int) -> None:
    """Write finished reports together: the transitions, their marks and their terminal events."""
    for to_state in {effect.to_state for _, effect, _ in settled}:
        assert_transition("QUEUED", to_state)
    changed: list[JobRow] = []
    errors: dict[str, str | None] = {}
    for start in range(0, len(settled), _SETTLE_ROWS):
        part = settled[start : start + _SETTLE_ROWS]
        values = ", ".join(["(?, ?, ?, ?)"] * len(part))
        params: list[Any] = [now_ms, now_ms, seq_floor(now_ms)]
        for job_id, effect, _ in part:
            params.extend((job_id, effect.to_state, effect.attempts, effect.result))
            errors[job_id] = effect.error
        sql = _SETTLE_SQL.format(values=values, columns=_SETTLED_RETURNING)
        changed.extend(
            job_from_row(row, REPORT_COLUMNS) for row in ctx.sql.execute(sql, (*params, *IN_FLIGHT))
        )
    ctx.jobs.mark_changed_many(changed)
    run_events: list[tuple[str, dict[str, Any]]] = []
    for job in changed:
        record_terminal_events(ctx, job, now_ms, error=errors[job["id"]], spawns=None, run_events=run_events)
    ctx.events.add_run_events(run_events)
    log_settled(changed, now_ms, errors)  # ADR-0145: one level check for the batch


def apply_report(
    ctx: ShardContext,
    job_id: str,
    outcome: Mapping[str, Any],
    now_ms: int,
    job: JobRow | None = None,
) -> int | None:
    """Apply one attempt's outcome; ignored when not in flight or stale (ADR-0046).

    ``job``: the job's current row when the caller already read it (``report_many``, ADR-0106); the
    ``REPORT_COLUMNS`` are enough.
    """
    # J-115
    if job is None:
        job = ctx.jobs.get(job_id)
    if job is None:
        return None
    effect = decide_report(_reported(job, with_backoff=True), outcome, now_ms, ctx.rand())
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
    spawns = outcome.get("spawns") if job["run_id"] is not None else None  # F-55: only run jobs spawn
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
    ctx: ShardContext, job_id: str, progress: Any, attempt: Any, now_ms: int
) -> dict[str, bool]:
    """only QUEUED/RUNNING jobs; moves the reaper's silence origin to now."""
    # J-111, J-66
    job = ctx.jobs.get(job_id)
    if job is None:
        return {"ok": False, "cancelRequested": False}
    if job["state"] == "CANCELLED":  # the performer should stop: the job is gone for good
        return {"ok": False, "cancelRequested": True}
    if job["state"] not in IN_FLIGHT or is_stale(_reported(job), attempt):
        return {"ok": False, "cancelRequested": False}
    assignments: dict[str, Any] = {
        "heartbeat_at": now_ms,
        "lane_at": lanes.silence_ends_after_heartbeat(now_ms),
    }
    value = normalize_progress(progress)  # J-67: no progress leaves the stored value
    if value is not None:
        assignments["progress"] = value
    ctx.jobs.update(job_id, IN_FLIGHT, now_ms, assignments, transition=False)
    return {"ok": True, "cancelRequested": job["cancel_requested_at"] is not None}


def _reported(job: Mapping[str, Any], *, with_backoff: bool = False) -> ReportedJob:
    return ReportedJob(
        state=job["state"],
        attempts=job["attempts"],
        max_attempts=job["max_attempts"],
        backoff=jsonwire.loads(job["backoff"]) if with_backoff else None,
        run_id=job["run_id"],
        cancel_requested_at=job["cancel_requested_at"],
    )


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
    row = to_terminal(
        ctx, job_id, ("SCHEDULED", "QUEUED", "RUNNING"), "CANCELLED", now_ms, error=EXPIRED_ERROR
    )
    return row is not None
