"""The shard's calls beyond enqueue, report and the tick, which a plain job never makes.

``ShardControls`` holds them for ``JobShard``: the consumer's heartbeats, claims and expiries, the
operator's retries, cancels and reschedules, policy changes and reads. Each ``apply_*`` function runs
inside one transaction; a mutation returns ``(result, arm_at)``.
"""
# J-66, J-107, J-111, J-41, J-130..J-135, J-175, J-176, J-185, J-186

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from tsumugi.coordinator.context import ShardContext
from tsumugi.coordinator.job_transitions import (
    EXPIRED_ERROR,
    IN_FLIGHT,
    to_running,
    to_scheduled,
    to_terminal,
)
from tsumugi.coordinator.mutation_result import DONE, GONE, INVALID_STATE, REQUESTED, MutationResult
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.core.policy import merge_policy, settings_from_wire
from tsumugi.core.progress import normalize_progress
from tsumugi.core.states import RETRYABLE_STATES, JobState, is_stale
from tsumugi.errors import UnknownMutationError
from tsumugi.storage import tick_tables as lanes
from tsumugi.storage.job_table import Assignments
from tsumugi.storage.tick_tables import LAST_BLOCKED

_RETRYABLE: Final = tuple(sorted(RETRYABLE_STATES))  # ("FAILED", "STALLED")
# J-41: an expiry cancels a job in any of the ACTIVE_STATES (in the order the statement binds them)
_ACTIVE: Final = (JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING)
_NOT_BLOCKED: Final[JsonObject] = {
    "capacity": False,
    "tokens": False,
    "perKey": False,
    "perKeyTokens": False,
    "paused": False,
}


class ShardControls:
    """The job shard's less travelled calls, over its context (``JobShard`` inherits them)."""

    ctx: ShardContext

    # ------------------------------------------------------------------ consumer calls
    async def heartbeat(self, job_id: str, progress: object = None, attempt: int | None = None) -> JsonObject:
        now = self.ctx.clock.now()
        answer = self.ctx.transaction(lambda: apply_heartbeat(self.ctx, job_id, progress, attempt, now))
        if answer["ok"]:
            await self.ctx.arm(now)  # J-66: project the progress
        return answer

    async def claim(self, job_id: str) -> bool:
        now = self.ctx.clock.now()
        return self.ctx.transaction(lambda: apply_claim(self.ctx, job_id, now))

    async def expire(self, job_id: str) -> bool:
        now = self.ctx.clock.now()
        expired = self.ctx.transaction(lambda: apply_expire(self.ctx, job_id, now))
        if expired:
            await self.ctx.arm(now)
        return expired

    # ------------------------------------------------------------------ operator mutations
    async def retry(self, job_id: str) -> JsonObject:
        return (await self._retry(job_id)).to_wire()

    async def cancel(self, job_id: str) -> JsonObject:
        return (await self._cancel(job_id)).to_wire()

    async def reschedule(
        self,
        job_id: str,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: float | None = None,
    ) -> JsonObject:
        now = self.ctx.clock.now()
        result = await self._mutate(
            lambda: apply_reschedule(self.ctx, job_id, run_at, delay_ms, priority, now)
        )
        return result.to_wire()

    async def mutate_many(self, action: str, job_ids: Sequence[str]) -> JsonObject:
        """Bulk retry/cancel with the per-job rules."""
        # J-134
        if action not in ("retry", "cancel"):
            raise UnknownMutationError(f"unknown bulk action: {action}")
        ok: list[JsonValue] = []
        failed: list[JsonValue] = []
        for job_id in job_ids:
            result = await (self._retry(job_id) if action == "retry" else self._cancel(job_id))
            if result.ok:
                ok.append(job_id)
            else:
                failed.append({"id": job_id, "reason": result.reason})
        return {"ok": ok, "failed": failed}

    async def _retry(self, job_id: str) -> MutationResult:
        now = self.ctx.clock.now()
        return await self._mutate(lambda: apply_retry(self.ctx, job_id, now))

    async def _cancel(self, job_id: str) -> MutationResult:
        now = self.ctx.clock.now()
        return await self._mutate(lambda: apply_cancel(self.ctx, job_id, now))

    async def _mutate(self, fn: Callable[[], tuple[MutationResult, int | None]]) -> MutationResult:
        result, arm_at = self.ctx.transaction(fn)
        if arm_at is not None:
            await self.ctx.arm(arm_at)
        return result

    # ------------------------------------------------------------------ settings (J-175, J-176)
    async def configure(self, settings: JsonMapping) -> JsonObject:
        """Replace policy and retention and pin them; notice targets stay as carried (ADR-0044)."""
        ctx = self.ctx
        current = ctx.settings

        def run() -> None:
            given = settings_from_wire(dict(settings))
            if "onFailure" not in settings and "onSettled" not in settings:
                given = replace(given, on_failure=current.on_failure, on_settled=current.on_settled)
            ctx.pin(given)

        ctx.transaction(run)
        await ctx.arm(ctx.clock.now())
        return ctx.settings.to_wire()

    async def update_policy(self, patch: JsonMapping, settings: JsonMapping | None = None) -> JsonObject:
        """Merge the given policy fields and pin.

        ``settings`` are the binding's static settings, which the caller's config knows (the REST
        layer passes them, as for a reset). A shard not yet pinned merges onto them: before its first
        enqueue it holds only the built-in defaults, since static settings travel with enqueues
        (ADR-0131). A pinned shard merges onto what it pinned.
        """
        # J-176, J-50
        ctx = self.ctx

        def run() -> None:
            base = ctx.settings if ctx.pinned or settings is None else ctx.static_settings(dict(settings))
            ctx.pin(replace(base, policy=merge_policy(base.policy, patch)))

        ctx.transaction(run)
        await ctx.arm(ctx.clock.now())
        return ctx.settings.to_wire()

    async def reset_policy(self, settings: JsonMapping | None = None) -> JsonObject:
        """Unpin and return to the static settings last carried by an enqueue."""
        # J-176
        ctx = self.ctx
        ctx.transaction(lambda: ctx.unpin(dict(settings) if settings is not None else None))
        await ctx.arm(ctx.clock.now())
        return ctx.settings.to_wire()

    # ------------------------------------------------------------------ reads (J-185, J-186)
    async def diagnostics(self) -> JsonObject:
        ctx = self.ctx
        blocked = {**_NOT_BLOCKED, **(ctx.store.get_object(LAST_BLOCKED) or {})}
        return {
            "active": ctx.lookups.count_active(),
            "outbox": ctx.lookups.count_dirty(),
            "blocked": blocked,
            "policy": ctx.settings.policy.to_stored_wire(),  # ADR-0157: every field, as stored
        }

    async def state_of(self, job_id: str) -> str | None:
        return self.ctx.lookups.state_of(job_id)


# ------------------------------------------------------------------ the transactions
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
