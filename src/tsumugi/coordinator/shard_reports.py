"""What the consumer tells the shard: report, heartbeat, claim, expire (J-66, J-95, J-107, J-119, J-41).

Each function runs inside one transaction and returns the instant to arm the alarm at (or None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tsumugi.coordinator.job_transitions import IN_FLIGHT, to_running, to_scheduled, to_terminal
from tsumugi.coordinator.shard_context import ShardContext
from tsumugi.coordinator.terminal_events import EXPIRED_ERROR
from tsumugi.core import jsonwire
from tsumugi.core.outcome import ReportedJob, decide_report, is_stale
from tsumugi.core.progress import normalize_progress
from tsumugi.storage.job_rows import JobRow


def apply_report(
    ctx: ShardContext,
    job_id: str,
    outcome: Mapping[str, Any],
    now_ms: int,
    job: JobRow | None = None,
) -> int | None:
    """Apply one attempt's outcome; ignored when not in flight or stale (J-115, ADR-0046).

    ``job``: the job's current row when the caller already read it (``report_many``, ADR-0106).
    """
    if job is None:
        job = ctx.jobs.get(job_id)
    if job is None:
        return None
    reported = ReportedJob(
        state=job["state"],
        attempts=job["attempts"],
        max_attempts=job["max_attempts"],
        backoff=jsonwire.loads(job["backoff"]),
        run_id=job["run_id"],
        cancel_requested_at=job["cancel_requested_at"],
    )
    effect = decide_report(reported, outcome, now_ms, ctx.rand())
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
    """J-66: only QUEUED/RUNNING jobs; moves the reaper's silence origin to now (J-111)."""
    job = ctx.jobs.get(job_id)
    if job is None:
        return {"ok": False, "cancelRequested": False}
    if job["state"] == "CANCELLED":  # the performer should stop: the job is gone for good
        return {"ok": False, "cancelRequested": True}
    if job["state"] not in IN_FLIGHT or is_stale(_reported(job), attempt):
        return {"ok": False, "cancelRequested": False}
    assignments: dict[str, Any] = {
        "heartbeat_at": now_ms,
        "lane_at": (
            "sql",
            "CASE WHEN cancel_requested_at IS NULL THEN max(dispatched_at, ?) + timeout_ms "
            "ELSE min(max(dispatched_at, ?) + timeout_ms, cancel_requested_at) END",
            [now_ms, now_ms],
        ),
    }
    value = normalize_progress(progress)  # J-67: no progress leaves the stored value
    if value is not None:
        assignments["progress"] = value
    ctx.jobs.update(job_id, IN_FLIGHT, now_ms, assignments, transition=False)
    return {"ok": True, "cancelRequested": job["cancel_requested_at"] is not None}


def _reported(job: Mapping[str, Any]) -> ReportedJob:
    return ReportedJob(job["state"], job["attempts"], job["max_attempts"], None)


def apply_claim(ctx: ShardContext, job_id: str, now_ms: int) -> bool:
    """QUEUED -> RUNNING; exactly one caller wins (J-107)."""
    return to_running(ctx, job_id, now_ms) is not None


def apply_expire(ctx: ShardContext, job_id: str, now_ms: int) -> bool:
    """The consumer found the job past ``expires_at``: CANCELLED without running (J-41)."""
    job = ctx.jobs.get(job_id)
    if job is None or job["expires_at"] is None:
        return False
    row = to_terminal(
        ctx, job_id, ("SCHEDULED", "QUEUED", "RUNNING"), "CANCELLED", now_ms, error=EXPIRED_ERROR
    )
    return row is not None
