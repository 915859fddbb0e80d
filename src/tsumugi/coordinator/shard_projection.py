"""A shard tick's projection step: into the read model in the tick, or beside the shard (ADR-0171)."""
# J-192, J-194

from __future__ import annotations

import asyncio
import functools

from tsumugi.coordinator.context import TICK_RETRY_MS, ShardContext, log
from tsumugi.coordinator.shard_ports import ShardProjection
from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS, TICK_ROWS
from tsumugi.storage.projection_outbox import ProjectedJobs
from tsumugi.storage.read_model_writer import ScalarSnapshot


async def project(ctx: ShardContext, now_ms: int) -> tuple[bool, int | None]:
    """Upsert up to 200 dirty jobs into the read model, or start that beside the shard (ADR-0171).

    Changed jobs go first — finished ones at once, the others once their change is
    ``FIRST_PROJECTION_DELAY_MS`` old (ADR-0135) — then new jobs that old (ADR-0119). Returns whether more
    are due now, and when the next waiting one falls due (a projection beside the shard arms that
    itself).
    """
    # J-192
    cutoff = now_ms - FIRST_PROJECTION_DELAY_MS + 1
    if ctx.projection is not None:
        beside = await _project_beside(ctx, ctx.projection, cutoff)
        if beside is not None:
            return beside
    batch = ctx.outbox.collect(TICK_ROWS, cutoff)
    if batch.snapshots:
        projected = batch.present()
        if projected and ctx.read_model is not None:
            await ctx.read_model.upsert_jobs(projected)
        done = batch.projected()
        # A job changed during the await keeps its mark: its version moved on (ADR-0042).
        ctx.transaction(lambda: ctx.outbox.clear_projected(done.versions, done.fresh, done.final))
        await _write_metrics(ctx, projected)  # J-194: after the cursor moved; at-most-once
    return (True, None) if batch.more else (False, _next_due(ctx))


async def _project_beside(
    ctx: ShardContext, projection: ShardProjection, cutoff: int
) -> tuple[bool, int | None] | None:
    """Start a projection beside the coordinator unless one runs (ADR-0171); None: none can run here.

    The tick does not wait for it: ``_collect_beside`` applies it, and arms the next wake itself.
    """
    running = ctx.projecting
    if running is not None and not running.done():
        ctx.project_again = True  # it may have read before this tick's changes
        return False, None
    started = await projection.start(TICK_ROWS, cutoff)
    if started is None:
        return None
    ctx.project_again = False
    ctx.projecting = asyncio.ensure_future(_collect_beside(ctx, projection, started))
    return False, None


async def _collect_beside(
    ctx: ShardContext, projection: ShardProjection, started: asyncio.Future[ProjectedJobs]
) -> None:
    """Clear each projection made beside the coordinator as it comes back, and start the next while
    more are due or a tick came meanwhile; then arm the wake for the next one due.

    It runs outside the coordinator's turns (the local runtime only): its one write, the clear, is a
    transaction of its own that keeps every mark whose job changed since it was read (ADR-0042).
    """
    wake: int | None
    cleared = False
    try:
        while True:
            done = await started
            if done.versions:
                clear = functools.partial(ctx.outbox.clear_projected, done.versions, done.fresh, done.final)
                ctx.transaction(clear)
                projection.write_points()  # J-194: after the cursor moved; at-most-once
                cleared = True
            if not (done.more or ctx.project_again):
                break
            ctx.project_again = False
            now = ctx.clock.now()
            following = await projection.start(TICK_ROWS, now - FIRST_PROJECTION_DELAY_MS + 1)
            if following is None:  # no writer any more: the next tick projects in the coordinator
                await ctx.arm(now)
                return
            started = following
        # The sweep passes over jobs still marked (J-170): the ticks since this began may have passed
        # over those it cleared, so one tick more runs now.
        wake = ctx.clock.now() if cleared else _next_due(ctx)
    except Exception:
        log.exception("tsumugi: projection failed")
        wake = ctx.clock.now() + TICK_RETRY_MS
    if wake is not None:
        await ctx.arm(wake)


def _next_due(ctx: ShardContext) -> int | None:
    """When the next projection falls due: the oldest new job's, or a changed job's still in flight."""
    waiting = [
        at for at in (ctx.outbox.earliest_fresh(), ctx.outbox.earliest_waiting_mark()) if at is not None
    ]
    return min(waiting) + FIRST_PROJECTION_DELAY_MS if waiting else None


async def _write_metrics(ctx: ShardContext, projected: list[ScalarSnapshot]) -> None:
    if ctx.metrics is not None:
        try:
            await ctx.metrics.write(projected)
        except Exception:  # M-4: logged and swallowed, never stops the tick; text from §11
            log.exception("tsumugi: writeMetrics failed")
