"""Scheduler: the TsumugiScheduler Durable Object minus the Durable Object.

Definitions live in code; storage holds one row per schedule with its next occurrence. Every tick
reconciles code and rows, fires what is due (once per due row) and arms the alarm.
"""
# S-12..S-20, S-11

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from tsumugi.clock import Clock
from tsumugi.coordinator.run_ports import RunPeers
from tsumugi.coordinator.scheduler_context import SchedulerContext
from tsumugi.core.cron import parse_cron
from tsumugi.core.flow.ids import scheduled_run_id
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.schedules import (
    JOB_OPTIONS,
    ScheduleContext,
    ScheduleDef,
    next_occurrence,
)
from tsumugi.core.states import ACTIVE_STATES
from tsumugi.core.wire_format import format_job_id, resolve_shard, shard_name, shard_name_of
from tsumugi.errors import ConfigurationError
from tsumugi.ports import AlarmPort, ShardNamespace, SqlExecutor
from tsumugi.storage.schedule_store import ScheduleRow

WIRE_OPTIONS: Final = {
    "max_attempts": "maxAttempts",
    "backoff": "backoff",
    "timeout_ms": "timeoutMs",
    "priority": "priority",
    "guarantee": "guarantee",
    "concurrency_key": "concurrencyKey",
}
NO_RUN_BINDING: Final = "RUN binding is not configured, add the Run DO binding to wrangler"


class Scheduler:
    """Owns every schedule's timing state; one instance named ``scheduler``, over its ``SchedulerContext``."""

    # S-12

    def __init__(
        self,
        sql: SqlExecutor,
        *,
        clock: Clock,
        alarm: AlarmPort,
        schedules: Sequence[ScheduleDef],
        shards: ShardNamespace,
        runs: RunPeers | None,
        shards_of: Mapping[str, int] | None = None,
        binding_settings: Callable[[str], JsonMapping] | None = None,
    ) -> None:
        """``binding_settings(binding)``: the settings a client enqueue carries to that binding."""
        # J-50
        self.ctx = SchedulerContext(
            sql,
            clock=clock,
            alarm=alarm,
            schedules=schedules,
            shards=shards,
            runs=runs,
            shards_of=shards_of,
            binding_settings=binding_settings,
        )

    async def list(self) -> list[JsonObject]:
        """Every schedule ordered by name, as stored; no reconcile."""
        # S-14, S-21
        return [row.listing() for row in self.ctx.store.rows()]

    async def sync(self) -> None:
        """Reconcile with the code, then arm."""
        # S-14
        self.ctx.transaction(lambda: self._reconcile(self.ctx.clock.now()))
        await self._arm()

    async def alarm(self) -> None:
        """The tick: one at a time; a failed one tries again in five seconds."""
        # S-16
        await self.ctx.tick(self._tick, failure="scheduler tick failed")

    async def _tick(self, now: int) -> None:
        """Reconcile, fire every due row once, then arm."""
        # S-16
        ctx = self.ctx
        ctx.transaction(lambda: self._reconcile(now))
        for row in ctx.store.due(now):
            spec = ctx.defs.get(row.name)
            if spec is None:
                ctx.store.delete(row.name)
                continue
            await self._fire(row, spec, now)
        await self._arm()

    # ------------------------------------------------------------------ internals
    def _reconcile(self, now: int) -> None:
        """add new names, re-phase changed timings, keep next_run_at otherwise, drop vanished."""
        # S-13
        ctx = self.ctx
        if ctx.store.fingerprint() == ctx.fingerprint:
            return
        rows = {row.name: row for row in ctx.store.rows()}
        for name, spec in ctx.defs.items():
            row = rows.pop(name, None)
            if row is None:
                first = _next(spec.every_ms, spec.cron, None, now)
                ctx.store.insert(
                    name, spec.kind, spec.target, spec.every_ms, spec.cron, spec.overlap, first, now
                )
            elif (row.every_ms, row.cron) != (spec.every_ms, spec.cron):
                ctx.store.update(
                    name,
                    now,
                    kind=spec.kind,
                    target=spec.target,
                    every_ms=spec.every_ms,
                    cron=spec.cron,
                    overlap=spec.overlap,
                    next_run_at=_next(spec.every_ms, spec.cron, None, now),
                )
            elif (row.kind, row.target, row.overlap) != (spec.kind, spec.target, spec.overlap):
                ctx.store.update(name, now, kind=spec.kind, target=spec.target, overlap=spec.overlap)
        for name in rows:
            ctx.store.delete(name)
        ctx.store.set_fingerprint(ctx.fingerprint)

    async def _arm(self) -> None:
        """the earliest next_run_at, unconditionally; no rows, no alarm."""
        # S-15
        ctx = self.ctx
        earliest = ctx.store.earliest()
        if earliest is None:
            await ctx.alarm_port.delete_alarm()
        else:
            await ctx.alarm_port.set_alarm(earliest)

    async def _fire(self, row: ScheduleRow, spec: ScheduleDef, now: int) -> None:
        """fire the stored occurrence once; missed ones are dropped; failures move on too."""
        # S-17
        ctx = self.ctx
        occurrence = row.next_run_at
        following = _next(spec.every_ms, spec.cron, occurrence, now)
        try:
            if spec.overlap == "skip" and await self._active(row, spec):
                ctx.store.update(
                    row.name,
                    now,
                    skipped_count=row.skipped_count + 1,
                    last_skipped_at=now,
                    next_run_at=following,
                )
                return
            job_id, run_id = await self._launch(spec, occurrence)
        except Exception as exc:
            ctx.tick_log.exception("schedule %s failed to fire", row.name)
            ctx.store.update(row.name, now, last_error=str(exc) or type(exc).__name__, next_run_at=following)
            return
        ctx.store.update(
            row.name,
            now,
            last_run_at=occurrence,
            last_fired_at=now,
            last_job_id=job_id,
            last_run_id=run_id,
            last_error=None,
            next_run_at=following,
        )

    async def _active(self, row: ScheduleRow, spec: ScheduleDef) -> bool:
        """is the previous firing still going?"""
        # S-20
        if spec.kind == "job":
            if row.last_job_id is None:
                return False
            state = await self.ctx.shards.get(shard_name_of(row.last_job_id)).state_of(row.last_job_id)
            return state in ACTIVE_STATES  # S-20
        if row.last_run_id is None:
            return False
        return await self._runs().get(row.last_run_id).state() == "RUNNING"

    async def _launch(self, spec: ScheduleDef, occurrence: int) -> tuple[str | None, str | None]:
        """Enqueue the job or start the run of one occurrence; ids derive from it."""
        # S-18
        ctx = self.ctx
        definition = spec.definition
        context = ScheduleContext(scheduled_at=occurrence)
        if spec.kind == "job":
            payload = await _resolve(definition.get("payload"), context)
            partition_key = definition.get("partition_key")
            shard = resolve_shard(spec.target, ctx.shards_of.get(spec.target, 1), partition_key)
            job_id = format_job_id(spec.target, shard, f"{spec.name}-{occurrence}")
            job: dict[str, object] = {"binding": spec.target, "payload": payload, "id": job_id}
            if partition_key is not None:
                job["partitionKey"] = partition_key
            for option in JOB_OPTIONS:
                if definition.get(option) is not None:
                    job[WIRE_OPTIONS[option]] = _wire(definition[option])
            # J-50: a scheduled job carries its binding's settings like any client enqueue.
            settings = ctx.binding_settings(spec.target) if ctx.binding_settings else None
            await ctx.shards.get(shard_name(spec.target, shard)).enqueue_many([job], settings or None)
            return job_id, None
        runs = self._runs()
        flow_input = await _resolve(definition.get("input"), context)
        run_id = scheduled_run_id(spec.target, spec.name, occurrence)
        await runs.get(run_id).start(spec.target, flow_input, definition.get("deadline_ms"))
        return None, run_id

    def _runs(self) -> RunPeers:
        ctx = self.ctx
        if ctx.runs is None:
            raise ConfigurationError(NO_RUN_BINDING)
        return ctx.runs


def _next(every_ms: int | None, cron: str | None, previous: int | None, now: int) -> int:
    return next_occurrence(every_ms, parse_cron(cron) if cron is not None else None, previous, now)


async def _resolve(value: object, context: ScheduleContext) -> object:
    """a value, or a function (sync or async) of the schedule context."""
    # S-4
    if callable(value):
        value = value(context)
        if inspect.isawaitable(value):
            value = await value
    return value


def _wire(value: object) -> object:
    to_wire = getattr(value, "to_wire", None)
    return to_wire() if callable(to_wire) else value
