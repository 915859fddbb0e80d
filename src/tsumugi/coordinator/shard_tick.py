"""One tick of the shard alarm: reap, dispatch, send, then the drains and the sweep."""
# J-161

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from tsumugi.coordinator.job_transitions import IN_FLIGHT, to_queued_many, to_scheduled, to_terminal
from tsumugi.coordinator.lifecycle_log import log_dispatched, log_retrying, log_tick
from tsumugi.coordinator.shard_context import ShardContext
from tsumugi.coordinator.terminal_events import EXPIRED_ERROR
from tsumugi.core import ids, jsonwire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.schedule import (
    ConfirmCancel,
    Decision,
    Dispatch,
    Expire,
    Fail,
    Reap,
    SchedulableJob,
    ScheduleResult,
    Stall,
    schedule,
)
from tsumugi.core.states import JobState
from tsumugi.core.token_bucket import bucket_from_wire, is_full, refill
from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.setting_store import BUCKET, LAST_BLOCKED

TICK_ROWS: Final = 200  # J-162/J-163: reaped, projected, notified, swept rows per tick; the rest re-runs
MAX_DISPATCH: Final = 500  # dispatches per tick; more ready work re-runs the tick at once (ADR-0043)
SKIP_BUDGET: Final = 200  # ready rows a tick may read past the ones it dispatches (per-key skips, expiry)
PROMOTE_LIMIT: Final = 1000  # waiting jobs moved into the ready lane per tick


@dataclass
class TickPlan:
    messages: list[JsonObject] = field(default_factory=list)
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
    """The scheduler's view of a row; a tuple rather than a ``JobView``, a frozen dataclass that costs
    several times as much to build, once per candidate per tick."""
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
    keys = {c["concurrency_key"] for c in candidates if c["concurrency_key"] is not None}
    result = schedule(
        now_ms,
        [view_of(j) for j in loaded + candidates],
        policy,
        bucket,
        ctx.store.key_buckets(keys),
        uncounted_in_flight=uncounted,
        uncounted_key_in_flight={k: n for k, n in key_counts.items() if n > 0},
    )
    _save_limits(ctx, result)
    plan = TickPlan(next_alarm_at=result.next_alarm_at)
    rows = {j["id"]: j for j in loaded + candidates}
    dispatches: list[str] = []
    for decision in result.decisions:
        if isinstance(decision, Dispatch):
            dispatches.append(decision.id)  # disjoint from the in-flight rows the others act on
        else:
            _apply(ctx, decision, rows, now_ms, plan)
    # J-161: QUEUED before the send. QUEUED changes none of the columns a message, the log line or the
    # queue lag read, so they come from the rows read above, in this transaction.
    queued = to_queued_many(ctx, [rows[job_id] for job_id in dispatches], now_ms)
    plan.messages = [dispatch_message(job) for job in queued]
    dispatched = len(plan.messages)
    log_dispatched(queued)  # ADR-0145
    plan.rerun = (  # J-163: bounded work left over runs in the next tick, at once
        promoted >= PROMOTE_LIMIT
        or len(due) >= TICK_ROWS
        or dispatched >= MAX_DISPATCH
        or (budget_spent and dispatched > 0)
    )
    waiting = ctx.lanes.earliest_waiting()
    if waiting is not None:
        plan.next_alarm_at = waiting if plan.next_alarm_at is None else min(plan.next_alarm_at, waiting)
    shard = ids.shard_name(ctx.binding, ctx.shard_index)
    log_tick(shard, now_ms, dispatched, len(result.decisions) - len(dispatches), plan.next_alarm_at)
    return plan


def _read_candidates(ctx: ShardContext, now_ms: int, want: int) -> tuple[list[JobRow], bool]:
    """Ready jobs in dispatch order: ``want`` + 1, plus keyed or expired ones up to SKIP_BUDGET.

    The one extra row lets ``schedule`` see that capacity, tokens or a pause held a job back.
    Returns the rows and whether the skip budget ran out.
    """
    # J-145
    out: list[JobRow] = []
    extra = 0
    aging = ctx.settings.policy.aging_interval_ms
    for job in ctx.lanes.ready_in_order(now_ms, aging, page_rows=min(want + 1, MAX_DISPATCH)):
        out.append(job)
        expired = job["expires_at"] is not None and now_ms >= job["expires_at"]
        if (job["concurrency_key"] is not None or expired) and extra < SKIP_BUDGET:
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
    ctx: ShardContext, decision: Decision, rows: dict[str, JobRow], now_ms: int, plan: TickPlan
) -> None:
    job = rows[decision.id]
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
        log_retrying(job, decision.attempts, now_ms, job["run_after"], None)  # ADR-0145: silent too long
    elif isinstance(decision, Stall):  # E9
        to_terminal(ctx, decision.id, IN_FLIGHT, JobState.STALLED, now_ms, attempts=decision.attempts)
    elif isinstance(decision, Fail):  # E8
        to_terminal(ctx, decision.id, IN_FLIGHT, JobState.FAILED, now_ms, attempts=decision.attempts)
    elif isinstance(decision, ConfirmCancel):  # J-135
        to_terminal(ctx, decision.id, IN_FLIGHT, JobState.CANCELLED, now_ms, attempts=job["attempts"] + 1)
    elif isinstance(decision, Expire):  # J-41
        to_terminal(ctx, decision.id, (JobState.SCHEDULED,), JobState.CANCELLED, now_ms, error=EXPIRED_ERROR)


def dispatch_message(job: JobRow) -> JsonObject:
    """The queue body (plus ``expiresAt`` and ``traceparent``)."""
    # J-116
    return {
        "jobId": job["id"],
        "binding": job["binding"],
        "attempt": job["attempts"] + 1,
        "payload": jsonwire.loads(job["payload"]),
        "timeoutMs": job["timeout_ms"],
        "claimRequired": job["guarantee"] == "at-most-once",
        "expiresAt": job["expires_at"],
        "traceparent": job["traceparent"],
    }
