"""The tick's drains and sweep (steps 5-8): send, project, notify runs, deliver notices, sweep."""
# J-161

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tsumugi.coordinator.shard_context import ShardContext, log
from tsumugi.coordinator.shard_tick import TICK_ROWS
from tsumugi.coordinator.snapshots import attempts_log_text
from tsumugi.core import ids
from tsumugi.core.json_types import JsonObject
from tsumugi.core.states import FAILURE_STATES, JobState
from tsumugi.storage.event_outbox import Notice

SEND_CHUNK: Final = 100  # Queue sendBatch takes at most 100 messages (J-161)
SWEEP_MIN_WAIT_MS: Final = 1000  # J-170: a shard of only failed jobs sleeps instead of polling
# A new job is first projected once it is this old, and a job in flight once its last change of state is,
# unless it finishes sooner: a job that settles within it is written to the read model once instead of
# twice or three times (ADR-0119, ADR-0135; the read model is seconds stale, A-41).
FIRST_PROJECTION_DELAY_MS: Final = 1000
_DONE: Final = (JobState.COMPLETED, JobState.CANCELLED)  # kept sweep_after_ms; swept in this order
_FAILED: Final = tuple(sorted(FAILURE_STATES))  # ("FAILED", "STALLED"): kept failed_retention_ms


async def send(ctx: ShardContext, messages: Sequence[JsonObject]) -> None:
    for start in range(0, len(messages), SEND_CHUNK):
        await ctx.queue.send_batch(messages[start : start + SEND_CHUNK])


async def project(ctx: ShardContext, now_ms: int) -> tuple[bool, int | None]:
    """Upsert up to 200 dirty jobs into the read model.

    Changed jobs go first — finished ones at once, the others once their change is
    ``FIRST_PROJECTION_DELAY_MS`` old (ADR-0135) — then new jobs that old (ADR-0119). Returns whether more
    are due now, and when the next waiting one falls due.
    """
    # J-192
    cutoff = now_ms - FIRST_PROJECTION_DELAY_MS + 1
    snaps, fresh = ctx.jobs.due_snapshots(TICK_ROWS, cutoff)
    if len(snaps) < TICK_ROWS:
        due_fresh = ctx.jobs.fresh_ids(cutoff, TICK_ROWS - len(snaps))
        new_ids = [job_id for job_id in due_fresh if job_id not in snaps]
        found = ctx.jobs.snapshots_of(new_ids)
        snaps.update((job_id, found.get(job_id)) for job_id in new_ids)  # None: gone since
        fresh.update(due_fresh)
    more = len(snaps) >= TICK_ROWS
    if snaps:
        present = {job_id: snap for job_id, snap in snaps.items() if snap is not None}
        # A job that never finished an attempt has no attempt rows: they are written only by a report,
        # with the job's attempts (never lowered, J-93, J-132) raised in the same transaction (ADR-0105).
        logs = ctx.attempts.newest_many([job_id for job_id, snap in present.items() if snap["attempts"]])
        for job_id, log_entries in logs.items():
            present[job_id]["attempts_log"] = attempts_log_text(log_entries)
        projected = list(present.values())
        if ctx.read_model is not None:
            await ctx.read_model.upsert_jobs(projected)
        # A job changed during the await keeps its mark: its version moved on (ADR-0042).
        versions = {i: None if s is None else (s["seq"], s["created_at"]) for i, s in snaps.items()}
        ctx.sql.transaction(lambda: ctx.jobs.clear_projected(versions, fresh))
        if ctx.metrics is not None:  # J-194: after the cursor moved; at-most-once
            try:
                await ctx.metrics.write(projected)
            except Exception:  # M-4: logged and swallowed, never stops the tick; text from §11
                log.exception("tsumugi: writeMetrics failed")
    if more:
        return True, None
    waiting = [at for at in (ctx.jobs.earliest_fresh(), ctx.jobs.earliest_waiting_mark()) if at is not None]
    return False, min(waiting) + FIRST_PROJECTION_DELAY_MS if waiting else None


async def notify_runs(ctx: ShardContext) -> tuple[bool, bool]:
    """Deliver up to 200 run events grouped per run; returns (more remain, a delivery failed)."""
    # F-45
    events = ctx.events.run_events(TICK_ROWS)
    grouped: dict[str, list[tuple[int, JsonObject]]] = {}
    for seq, run_id, event in events:
        grouped.setdefault(run_id, []).append((seq, event))
    failed = False
    for run_id, items in grouped.items():
        seqs = [seq for seq, _ in items]
        if ctx.runs is None:
            log.error("tsumugi: cannot notify the run, RUN binding is not configured")
            ctx.events.delete_run_events(seqs)
            continue
        try:
            await ctx.runs.get(run_id).notify([event for _, event in items])
        except Exception:
            log.exception("tsumugi: run notify failed (%s)", run_id)
            failed = True
            continue
        ctx.events.delete_run_events(seqs)
    return len(events) >= TICK_ROWS, failed


async def deliver_notices(ctx: ShardContext) -> tuple[bool, bool]:
    """Enqueue up to 200 notice jobs at their target's shard 0; (more remain, a failure)."""
    # J-180b
    notices = ctx.events.notices(TICK_ROWS)
    grouped: dict[str, list[Notice]] = {}
    for notice in notices:
        grouped.setdefault(notice.target, []).append(notice)
    failed = False
    for target, items in grouped.items():
        seqs = [notice.seq for notice in items]
        if ctx.shards is None:
            log.error("tsumugi: cannot deliver notices to %s, JOB_SHARD is not configured", target)
            ctx.events.delete_notices(seqs)
            continue
        inputs = [_notice_input(notice) for notice in items]
        try:
            await ctx.shards.get(ids.shard_name(target, 0)).enqueue_many(inputs, None)
        except Exception:
            log.exception("tsumugi: notice delivery failed (%s)", target)
            failed = True
            continue
        ctx.events.delete_notices(seqs)
    return len(notices) >= TICK_ROWS, failed


def _notice_input(notice: Notice) -> JsonObject:
    wire: JsonObject = {"binding": notice.target, "payload": notice.payload, "id": notice.notice_id}
    if notice.traceparent is not None:
        wire["traceparent"] = notice.traceparent  # J-40: a notice continues the trace of its job
    return wire


def sweep(ctx: ShardContext, now_ms: int) -> tuple[bool, int | None]:
    """Delete finished jobs past retention; returns (more remain, when to wake for the next)."""
    # J-170
    settings = ctx.settings

    def run() -> tuple[bool, int | None]:
        ctx.unique.delete_expired(now_ms)
        doomed = ctx.lanes.finished_before(_DONE, now_ms - settings.sweep_after_ms, TICK_ROWS)
        if len(doomed) < TICK_ROWS:
            doomed += ctx.lanes.finished_before(
                _FAILED, now_ms - settings.failed_retention_ms, TICK_ROWS - len(doomed)
            )
        if doomed:
            ctx.jobs.delete_many(doomed)  # attempt rows first, then the jobs (J-170)
        due: list[int] = []
        for states, keep_ms in ((_DONE, settings.sweep_after_ms), (_FAILED, settings.failed_retention_ms)):
            for state in states:
                earliest = ctx.lanes.earliest_finished(state)
                if earliest is not None:
                    due.append(earliest + keep_ms + 1)  # strictly older than the cutoff (J-170)
        wake = max(min(due), now_ms + SWEEP_MIN_WAIT_MS) if due else None
        return len(doomed) >= TICK_ROWS, wake

    return ctx.sql.transaction(run)
