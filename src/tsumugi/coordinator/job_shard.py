"""JobShard: the TsumugiJobShard Durable Object minus the Durable Object (implements ``ShardRpc``).

A class over its ``ShardContext`` (ADR-0160). Every RPC runs its storage work synchronously in one
transaction (so check-then-insert is atomic), then awaits only the alarm. The alarm handler is one tick.
"""
# J-4, J-161

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from tsumugi.clock import Clock
from tsumugi.coordinator import shard_tick
from tsumugi.coordinator.context import TICK_RETRY_MS, MetricsWriter, ShardContext, log
from tsumugi.coordinator.mutation_result import MutationResult
from tsumugi.coordinator.shard_enqueue import enqueue_batch
from tsumugi.coordinator.shard_mutations import apply_cancel, apply_reschedule, apply_retry
from tsumugi.coordinator.shard_reports import (
    apply_claim,
    apply_expire,
    apply_heartbeat,
    apply_report,
    apply_reports,
)
from tsumugi.coordinator.shard_tick import plan_tick
from tsumugi.core.enqueue_keys import EnqueueOutcome
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.core.outcome import outcome_from_wire
from tsumugi.core.policy import merge_policy, settings_from_wire
from tsumugi.errors import UnknownMutationError
from tsumugi.ports import AlarmPort, DispatchQueue, ReadModelWriter, RunNamespace, ShardNamespace, SqlExecutor
from tsumugi.storage.key_tables import LAST_BLOCKED

_NOT_BLOCKED: Final[JsonObject] = {
    "capacity": False,
    "tokens": False,
    "perKey": False,
    "perKeyTokens": False,
    "paused": False,
}


class JobShard:
    """One shard of one binding (``<binding>#<n>``)."""

    # J-17

    def __init__(
        self,
        name: str,
        sql: SqlExecutor,
        *,
        clock: Clock,
        alarm: AlarmPort,
        queue: DispatchQueue,
        read_model: ReadModelWriter | None = None,
        shards: ShardNamespace | None = None,
        runs: RunNamespace | None = None,
        rand: Callable[[], float] = random.random,
        metrics: MetricsWriter | None = None,
    ) -> None:
        self.ctx = ShardContext(
            name,
            sql,
            clock=clock,
            alarm=alarm,
            queue=queue,
            read_model=read_model,
            shards=shards,
            runs=runs,
            rand=rand,
            metrics=metrics,
        )

    @property
    def name(self) -> str:
        return self.ctx.name

    # ------------------------------------------------------------------ enqueue (J-22..J-39, J-50)
    async def enqueue_many(
        self, inputs: Sequence[Mapping[str, object]], settings: JsonMapping | None = None
    ) -> list[str]:
        ctx = self.ctx
        now = ctx.clock.now()

        def run() -> list[str]:
            if settings is not None:
                ctx.carry_settings(dict(settings))
            return enqueue_batch(ctx, list(inputs), now)

        job_ids = ctx.transaction(run)
        await ctx.arm(now)  # J-31
        return job_ids

    async def enqueue_outcomes(
        self, inputs: Sequence[Mapping[str, object]], settings: JsonMapping | None = None
    ) -> list[JsonObject]:
        """``enqueue_many`` answering what each input did (ADR-0149, ADR-0150).

        Each entry is ``{id, status, runAfter}``: status ``created``, ``existing``, ``debounced`` or
        ``dropped`` (id None).
        """
        ctx = self.ctx
        now = ctx.clock.now()
        outcomes: list[EnqueueOutcome] = []

        def run() -> None:
            outcomes.clear()
            if settings is not None:
                ctx.carry_settings(dict(settings))
            enqueue_batch(ctx, list(inputs), now, outcomes)

        ctx.transaction(run)
        await ctx.arm(now)  # J-31
        return [outcome.to_wire() for outcome in outcomes]

    # ------------------------------------------------------------------ consumer calls
    async def report(self, job_id: str, outcome: Mapping[str, object]) -> None:
        now = self.ctx.clock.now()
        decoded = outcome_from_wire(outcome)  # the wire dict, read once (ADR-0046)
        arm_at = self.ctx.transaction(lambda: apply_report(self.ctx, job_id, decoded, now))
        if arm_at is not None:
            await self.ctx.arm(arm_at)

    async def report_many(self, reports: Sequence[tuple[str, Mapping[str, object]]]) -> None:
        """Apply several reports in one transaction, as if ``report`` ran for each in turn (ADR-0106).

        Only the local runtime calls it, batching reports that arrive while the shard is busy. If it
        raises, nothing was applied.
        """
        ctx = self.ctx
        now = ctx.clock.now()

        arm_at = ctx.transaction(lambda: apply_reports(ctx, reports, now))
        if arm_at is not None:
            await ctx.arm(arm_at)

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
            "active": ctx.jobs.count_active(),
            "outbox": ctx.jobs.count_dirty(),
            "blocked": blocked,
            "policy": ctx.settings.policy.to_stored_wire(),  # ADR-0157: every field, as stored
        }

    async def state_of(self, job_id: str) -> str | None:
        return self.ctx.jobs.state_of(job_id)

    # ------------------------------------------------------------------ the tick (J-161)
    async def alarm(self) -> None:
        await self.ctx.tick(self._tick, failure="tsumugi: tick failed")  # J-164

    async def _tick(self, now: int) -> None:
        """Plan and send in one transaction, then the drains and the sweep; arm at the earliest wake."""
        ctx = self.ctx
        plan = ctx.transaction(lambda: plan_tick(ctx, now))
        await shard_tick.send(ctx, plan.messages)
        wake: list[int | None] = [plan.next_alarm_at]
        rerun = plan.rerun
        try:
            more, fresh_due_at = await shard_tick.project(ctx, now)
            rerun = rerun or more
            wake.append(fresh_due_at)
        except Exception:
            log.exception("tsumugi: projection failed")
            wake.append(now + TICK_RETRY_MS)
        for drain in (shard_tick.notify_runs, shard_tick.deliver_notices):
            more, failed = await drain(ctx)
            rerun = rerun or more
            if failed:
                wake.append(now + TICK_RETRY_MS)
        more, sweep_at = shard_tick.sweep(ctx, now)
        wake.append(sweep_at)
        if rerun or more:
            wake.append(now)
        present = [w for w in wake if w is not None]
        if present:
            await ctx.arm(min(present), stale_before=now)
