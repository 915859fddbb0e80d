"""One tick of the shard alarm: reap, dispatch, send, project (``shard_projection``), notify runs, deliver
notices, sweep."""
# J-161

from __future__ import annotations

import json
import logging
import operator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from tsumugi.coordinator import lifecycle_log
from tsumugi.coordinator.context import ShardContext, log
from tsumugi.coordinator.job_transitions import (
    EXPIRED_ERROR,
    IN_FLIGHT,
    to_queued_many,
    to_scheduled,
    to_terminal,
)
from tsumugi.core import wire_format
from tsumugi.core.job_view import SchedulableJob
from tsumugi.core.json_types import JsonObject
from tsumugi.core.schedule import (
    ConfirmCancel,
    Decision,
    Expire,
    Fail,
    Reap,
    ScheduleResult,
    Stall,
    bucket_from_wire,
    is_full,
    refill,
    schedule,
)
from tsumugi.core.states import FAILURE_STATES, JobState
from tsumugi.logging import jobs_log
from tsumugi.ports import takes_encoded
from tsumugi.storage.event_outbox import Notice
from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.tick_tables import BUCKET, LAST_BLOCKED, DispatchRow

TICK_ROWS: Final = 200  # J-162/J-163: reaped, projected, notified, swept rows per tick; the rest re-runs
MAX_DISPATCH: Final = 500  # dispatches per tick; more ready work re-runs the tick at once (ADR-0043)
SKIP_BUDGET: Final = 200  # ready rows a tick may read past the ones it dispatches (per-key skips, expiry)
PROMOTE_LIMIT: Final = 1000  # waiting jobs moved into the ready lane per tick
SEND_CHUNK: Final = 100  # Queue sendBatch takes at most 100 messages (J-161)
SWEEP_MIN_WAIT_MS: Final = 1000  # J-170: a shard of only failed jobs sleeps instead of polling
# A new job is first projected once it is this old, and a job in flight once its last change of state is,
# unless it finishes sooner: a job that settles within it is written to the read model once instead of
# twice or three times (ADR-0119, ADR-0135; the read model is seconds stale, A-41).
FIRST_PROJECTION_DELAY_MS: Final = 1000
_DONE: Final = (JobState.COMPLETED, JobState.CANCELLED)  # kept sweep_after_ms; swept in this order
_FAILED: Final = tuple(sorted(FAILURE_STATES))  # ("FAILED", "STALLED"): kept failed_retention_ms


@dataclass
class TickPlan:
    messages: list[JsonObject] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # the messages as JSON, for a queue that keeps text
    next_alarm_at: int | None = None
    rerun: bool = False


class _View(NamedTuple):
    """What ``schedule`` reads of a row (``SchedulableJob``): a tuple, built in C from the row's dict."""

    id: str
    state: str
    priority: float
    created_at: int
    run_after: int
    attempts: int
    max_attempts: int
    guarantee: str
    timeout_ms: int
    concurrency_key: str | None
    dispatched_at: int | None
    heartbeat_at: int | None
    cancel_requested_at: int | None
    expires_at: int | None


_view_values: Final = operator.itemgetter(*_View._fields)
_make_view: Final = _View._make


def view_of(job: JobRow) -> SchedulableJob:
    """The scheduler's view of an in-flight row the tick read whole; a tuple rather than a ``JobView``, a
    frozen dataclass that costs several times as much to build. A ready job's ``DispatchRow`` is read by
    the scheduler as it is."""
    view: _View = _make_view(_view_values(job))
    return view


def plan_tick(ctx: ShardContext, now_ms: int) -> TickPlan:
    """The middle of a tick in one transaction: read the lanes, decide, apply; returns the messages."""
    policy = ctx.settings.policy
    promoted = ctx.lanes.promote_due(now_ms, PROMOTE_LIMIT)
    due = ctx.lanes.in_flight_due(now_ms, policy.reaper_grace_ms, TICK_ROWS)
    loaded = due + ctx.lanes.next_in_flight(now_ms, policy.reaper_grace_ms)
    key_counts = ctx.lanes.key_in_flight()
    for job in loaded:
        key = job["concurrency_key"]
        if key is not None:
            key_counts[key] -= 1
    uncounted = ctx.lanes.count_in_flight() - len(loaded)
    free = max(0, policy.concurrency - uncounted - (len(loaded) - len(due)))
    bucket = bucket_from_wire(ctx.store.get_object(BUCKET))
    tokens = refill(bucket, policy.rate, now_ms).tokens  # only to size the read; schedule refills itself
    want = 0 if policy.paused else int(min(free, MAX_DISPATCH, tokens))
    candidates, budget_spent = _read_candidates(ctx, now_ms, want)
    keys = {c.concurrency_key for c in candidates if c.concurrency_key is not None}
    views: list[SchedulableJob] = [view_of(j) for j in loaded]
    views.extend(candidates)  # a ready row is read as the scheduler reads a job
    result = schedule(
        now_ms,
        views,
        policy,
        bucket,
        ctx.store.key_buckets(keys),
        uncounted_in_flight=uncounted,
        uncounted_key_in_flight={k: n for k, n in key_counts.items() if n > 0},
        ready_in_order=True,  # J-142: ``ready_in_order`` reads them in dispatch order (ADR-0043)
    )
    _save_limits(ctx, result)
    plan = TickPlan(next_alarm_at=result.next_alarm_at)
    in_flight = {j["id"]: j for j in loaded}
    for decision in result.decided:
        _apply(ctx, decision, in_flight, now_ms, plan)
    # Only ready SCHEDULED jobs are dispatched: the candidates, read as ``DispatchRow``s, never an
    # in-flight row's view.
    dispatches = [job for job in result.dispatched if isinstance(job, DispatchRow)]
    if len(dispatches) != len(result.dispatched):
        raise RuntimeError("the tick dispatched a job that was not a ready candidate")
    # J-161: QUEUED before the send. QUEUED changes none of the columns a message, the log line or the
    # queue lag read, so they come from the rows read above, in this transaction.
    queued = to_queued_many(ctx, dispatches, now_ms)
    if takes_encoded(ctx.queue):
        plan.texts = [dispatch_text(job) for job in queued]
    else:
        plan.messages = [dispatch_message(job) for job in queued]
    dispatched = len(queued)
    if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145
        lifecycle_log.dispatched(queued)
    plan.rerun = (  # J-163: bounded work left over runs in the next tick, at once
        promoted >= PROMOTE_LIMIT
        or len(due) >= TICK_ROWS
        or dispatched >= MAX_DISPATCH
        or (budget_spent and dispatched > 0)
    )
    waiting = ctx.lanes.earliest_waiting()
    if waiting is not None:
        plan.next_alarm_at = waiting if plan.next_alarm_at is None else min(plan.next_alarm_at, waiting)
    if jobs_log.isEnabledFor(logging.DEBUG):
        shard = wire_format.shard_name(ctx.binding, ctx.shard_index)
        decided = len(result.decided)
        lifecycle_log.tick(shard, now_ms, dispatched, decided, plan.next_alarm_at)
    return plan


def _read_candidates(ctx: ShardContext, now_ms: int, want: int) -> tuple[list[DispatchRow], bool]:
    """Ready jobs in dispatch order: ``want`` + 1, plus keyed or expired ones up to SKIP_BUDGET.

    The one extra row lets ``schedule`` see that capacity, tokens or a pause held a job back.
    Returns the rows and whether the skip budget ran out.
    """
    # J-145
    out: list[DispatchRow] = []
    extra = 0
    aging = ctx.settings.policy.aging_interval_ms
    for job in ctx.lanes.ready_in_order(now_ms, aging, first_rows=want + 1):
        out.append(job)
        expired = job.expires_at is not None and now_ms >= job.expires_at
        if (job.concurrency_key is not None or expired) and extra < SKIP_BUDGET:
            extra += 1
        if len(out) >= want + 1 + extra:
            break
    return out, extra >= SKIP_BUDGET


def _save_limits(ctx: ShardContext, result: ScheduleResult) -> None:
    """Persist the bucket when not full, per-key buckets, and ``blocked`` when changed."""
    # J-149, J-161
    policy = ctx.settings.policy
    stored = ctx.store.get(BUCKET)
    if not is_full(result.bucket, policy.rate):
        ctx.store.put(BUCKET, result.bucket.to_wire())
    elif stored is not None:
        ctx.store.delete(BUCKET)
    partial = {k: b for k, b in result.key_buckets.items() if not is_full(b, policy.key_rate(k))}
    ctx.store.save_key_buckets(partial, [k for k in result.key_buckets if k not in partial])
    blocked = result.blocked.to_wire()
    if ctx.store.get(LAST_BLOCKED) != blocked:
        ctx.store.put(LAST_BLOCKED, blocked)


def _apply(
    ctx: ShardContext, decision: Decision, in_flight: dict[str, JobRow], now_ms: int, plan: TickPlan
) -> None:
    """A decision other than a dispatch; all but an expiry act on an in-flight row read this tick."""
    if isinstance(decision, Expire):  # J-41
        to_terminal(ctx, decision.id, (JobState.SCHEDULED,), JobState.CANCELLED, now_ms, error=EXPIRED_ERROR)
        return
    job = in_flight[decision.id]
    if isinstance(decision, Reap):  # E7: no backoff, run_after unchanged (J-104)
        to_scheduled(
            ctx,
            decision.id,
            IN_FLIGHT,
            now_ms,
            run_after=job["run_after"],
            attempts=decision.attempts,
            dispatched_at=None,
        )
        if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145: silent too long
            lifecycle_log.retrying(job, decision.attempts, now_ms, job["run_after"], None)
    elif isinstance(decision, Stall):  # E9
        to_terminal(ctx, decision.id, IN_FLIGHT, JobState.STALLED, now_ms, attempts=decision.attempts)
    elif isinstance(decision, Fail):  # E8
        to_terminal(ctx, decision.id, IN_FLIGHT, JobState.FAILED, now_ms, attempts=decision.attempts)
    elif isinstance(decision, ConfirmCancel):  # J-135
        to_terminal(ctx, decision.id, IN_FLIGHT, JobState.CANCELLED, now_ms, attempts=job["attempts"] + 1)


def dispatch_message(job: DispatchRow) -> JsonObject:
    """The queue body (plus ``expiresAt`` and ``traceparent``)."""
    # J-116
    return {
        "jobId": job.id,
        "binding": job.binding,
        "attempt": job.attempts + 1,
        "payload": wire_format.loads(job.payload),
        "timeoutMs": job.timeout_ms,
        "claimRequired": job.guarantee == "at-most-once",
        "expiresAt": job.expires_at,
        "traceparent": job.traceparent,
    }


_quote: Final = json.encoder.encode_basestring  # a JSON string, unescaped: as the queue's encoder writes it


def dispatch_text(job: DispatchRow) -> str:
    """``dispatch_message`` as JSON text, written around the payload's stored JSON, never decoded."""
    # J-116
    timeout_ms, expires_at, traceparent = job.timeout_ms, job.expires_at, job.traceparent
    return (
        f'{{"jobId":{_quote(job.id)},"binding":{_quote(job.binding)},'
        f'"attempt":{job.attempts + 1},"payload":{job.payload},'
        f'"timeoutMs":{"null" if timeout_ms is None else timeout_ms},'
        f'"claimRequired":{"true" if job.guarantee == "at-most-once" else "false"},'
        f'"expiresAt":{"null" if expires_at is None else expires_at},'
        f'"traceparent":{"null" if traceparent is None else _quote(traceparent)}}}'
    )


# ------------------------------------------------------------------ the drains and the sweep (steps 5-8)
async def send(ctx: ShardContext, plan: TickPlan) -> None:
    """The tick's messages, at most 100 per ``send_batch``; a queue that keeps text takes them at once."""
    # J-161
    queue = ctx.queue
    if plan.texts and takes_encoded(queue):
        await queue.send_encoded(plan.texts)
    for start in range(0, len(plan.messages), SEND_CHUNK):
        await queue.send_batch(plan.messages[start : start + SEND_CHUNK])


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
            await ctx.shards.get(wire_format.shard_name(target, 0)).enqueue_many(inputs, None)
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

    return ctx.transaction(run)
