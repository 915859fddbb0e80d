"""JobShard: the TsumugiJobShard Durable Object minus the Durable Object (implements ``ShardRpc``).

A class over its ``ShardContext`` (ADR-0160). Every RPC runs its storage work synchronously in one
transaction (so check-then-insert is atomic), then awaits only the alarm. The alarm handler is one tick
(``shard_tick``); reports move jobs through ``job_transitions``. Enqueue's dedupe, ids and insert are
here too, below the class; ``enqueue_wire`` builds the row of a job that sets options.
"""
# J-4, J-161, J-22..J-41

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

from tsumugi import telemetry
from tsumugi.clock import Clock
from tsumugi.coordinator import lifecycle_log, shard_projection, shard_tick
from tsumugi.coordinator.context import TICK_RETRY_MS, ShardContext, log
from tsumugi.coordinator.enqueue_wire import (
    DEFAULT_BACKOFF_TEXT,
    PAYLOAD_TEXT_KEY,
    PLAIN_KEYS,
    EnqueueItem,
    new_job_row,
    opt_int,
    payload_text,
    text,
)
from tsumugi.coordinator.first_attempts import FirstAttempts
from tsumugi.coordinator.job_transitions import apply_report
from tsumugi.coordinator.report_batches import apply_reports
from tsumugi.coordinator.shard_controls import ShardControls
from tsumugi.coordinator.shard_ports import MetricsWriter, ShardProjection
from tsumugi.coordinator.shard_tick import plan_tick
from tsumugi.core import wire_format
from tsumugi.core.defaults import (  # ADR-0157: said once
    DEFAULT_GUARANTEE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_TIMEOUT_MS,
)
from tsumugi.core.enqueue_outcome import EnqueueOutcome
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.states import JobState, outcome_from_wire
from tsumugi.core.wire_format import check_payload_text
from tsumugi.errors import EnqueueError
from tsumugi.logging import jobs_log
from tsumugi.ports import AlarmPort, DispatchQueue, ReadModelWriter, RunNamespace, ShardNamespace, SqlExecutor
from tsumugi.storage.job_rows import JobRow, scheduled_lane, seq_floor

if TYPE_CHECKING:
    from tsumugi.coordinator.shard_enqueue_keys import KeyedEnqueue

DEFAULT_UNIQUE_FOR_MS: Final = 86_400_000  # 24 h reservation (5.2)
# A run's job node: a given id and the run it belongs to, every other option at its default. The
# partition key only chose the shard.
_NODE_KEYS: Final = PLAIN_KEYS | {"id", "runId", "nodeId", "partitionKey", PAYLOAD_TEXT_KEY}


class JobShard(ShardControls):
    """One shard of one binding (``<binding>#<n>``); the less travelled calls come from ``ShardControls``."""

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
        projection: ShardProjection | None = None,
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
            projection=projection,
        )

    @property
    def name(self) -> str:
        return self.ctx.name

    async def quiesce(self, timeout_s: float) -> None:
        """Called as the runtime stops, before it closes the shard (the local runtime only): the
        projection running beside the shard finishes, so the listing is complete at the stop."""
        await self.ctx.finish_projection(timeout_s)

    def close(self) -> None:
        """Called as the runtime closes the shard's storage (the local runtime only)."""
        self.ctx.close()

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
        if self.ctx.first_attempts is not None:  # ADR-0181: read back here; forgotten
            self.ctx.first_attempts.take(job_id)
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
        if ctx.first_attempts is None:  # ADR-0181: reports come in batches here; remember dispatches
            ctx.first_attempts = FirstAttempts()
        arm_at = ctx.transaction(lambda: apply_reports(ctx, reports, now))
        if arm_at is not None:
            await ctx.arm(arm_at)

    # ------------------------------------------------------------------ the tick (J-161)
    async def alarm(self) -> None:
        await self.ctx.tick(self._tick, failure="tsumugi: tick failed")  # J-164

    async def _tick(self, now: int) -> None:
        """Plan and send in one transaction, then the drains and the sweep; arm at the earliest wake."""
        ctx = self.ctx
        plan = ctx.transaction(lambda: plan_tick(ctx, now))
        await shard_tick.send(ctx, plan)
        wake: list[int | None] = [plan.next_alarm_at]
        rerun = plan.rerun
        try:
            more, fresh_due_at = await shard_projection.project(ctx, now)
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


# ------------------------------------------------------------------ enqueue inside the shard (J-26..J-41)
_FastEnqueue: TypeAlias = Callable[
    [ShardContext, list[EnqueueItem], int, str, JobRow, list[EnqueueOutcome] | None], list[str]
]


def _keyed_enqueue(ctx: ShardContext, now_ms: int) -> KeyedEnqueue:
    """Debounce and throttle keys' side of a batch; their storage loads with the first keyed job."""
    from tsumugi.coordinator.shard_enqueue_keys import KeyedEnqueue

    return KeyedEnqueue(ctx, now_ms)


def enqueue_batch(
    ctx: ShardContext,
    inputs: list[EnqueueItem],
    now_ms: int,
    outcomes: list[EnqueueOutcome] | None = None,
) -> list[str]:
    """Apply one ``enqueue_many`` group in one pass; returns ids in input order.

    The rows are inserted together at the end, with one prepared statement (ADR-0105). A job a throttle
    dropped has the empty id (ADR-0150); ``outcomes``, when given, receives what each input did.
    """
    # J-22, J-39
    id_prefix = wire_format.shard_name(ctx.binding, ctx.shard_index) + ":"  # J-12, validated once per batch
    template = job_template(ctx.binding, now_ms)
    fast = _fast_path(inputs)
    if fast is not None:
        return fast(ctx, inputs, now_ms, id_prefix, template, outcomes)
    out: list[str] = []
    rows: list[tuple[JobRow, int, float]] = []
    new_ids: set[str] = set()
    fresh_ids = iter(wire_format.new_local_ids(len(inputs)))
    expired_swept = False
    given = [job_id for job_id in (text(item, "id") for item in inputs) if job_id is not None]
    held = ctx.lookups.existing(given) if given else set()  # J-38: one read for the batch's given ids
    keyed: KeyedEnqueue | None = None
    note = outcomes.append if outcomes is not None else _ignore
    for item in inputs:
        given_id = text(item, "id")
        if given_id is not None and (given_id in new_ids or given_id in held):
            out.append(given_id)  # J-38: idempotent node enqueue, within the batch too
            note(EnqueueOutcome(given_id, "existing"))
            continue
        if "debounceKey" in item or "throttleKey" in item:
            keyed = keyed or _keyed_enqueue(ctx, now_ms)
            answered = keyed.before_insert(item, rows)  # ADR-0149 debounced, ADR-0150 dropped
            if answered is not None:
                out.append(answered.id or "")
                note(answered)
                continue
        job_id = given_id or id_prefix + next(fresh_ids)
        unique_key = text(item, "uniqueKey")
        if unique_key is not None:
            if not expired_swept:  # J-33: expired reservations go first
                ctx.unique.delete_expired(now_ms)
                expired_swept = True
            expires_at = now_ms + opt_int(item, "uniqueForMs", DEFAULT_UNIQUE_FOR_MS)
            holder = ctx.unique.reserve(unique_key, job_id, expires_at)
            if holder is not None:  # J-33, J-36: the holder's id, not an error (ADR-0021)
                out.append(holder)
                note(EnqueueOutcome(holder, "existing"))
                continue
        job = new_job_row(job_id, item, now_ms, template)
        if keyed is not None:
            keyed.shape(item, job, len(rows))
        ready, lane_at = scheduled_lane(job["run_after"], job["priority"], now_ms)
        rows.append((job, ready, lane_at))
        new_ids.add(job_id)
        out.append(job_id)
        note(EnqueueOutcome(job_id, "created", job["run_after"]))
    if keyed is not None:
        keyed.window_ends(rows)
    ctx.jobs.insert_many(rows)
    _scheduled(ctx, len(rows))
    if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145
        lifecycle_log.enqueued((job for job, _, _ in rows), now_ms)
    return out


def _enqueue_plain(
    ctx: ShardContext,
    inputs: list[EnqueueItem],
    now_ms: int,
    id_prefix: str,
    template: JobRow,
    outcomes: list[EnqueueOutcome] | None,
) -> list[str]:
    """``enqueue_batch`` when no input sets an option: new ids, one payload pass, one insert (ADR-0120)."""
    job_ids = [id_prefix + local_id for local_id in wire_format.new_local_ids(len(inputs))]
    payloads = _payload_texts([item.get("payload") for item in inputs])
    ready, lane_at = scheduled_lane(now_ms, DEFAULT_PRIORITY, now_ms)
    ctx.jobs.insert_uniform(template, ready, lane_at, list(zip(job_ids, payloads, strict=True)))
    if outcomes is not None:
        outcomes.extend(EnqueueOutcome(job_id, "created", now_ms) for job_id in job_ids)
    _scheduled(ctx, len(job_ids))
    if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145
        lifecycle_log.enqueued_ids(ctx.binding, job_ids)
    return job_ids


def _fast_path(inputs: list[EnqueueItem]) -> _FastEnqueue | None:
    """The path for a batch that sets no option (ADR-0120): plain jobs, or a run's job nodes when no one
    reads the lifecycle log; None for any other batch."""
    if all(item.keys() <= PLAIN_KEYS for item in inputs):
        return _enqueue_plain
    if all(item.keys() <= _NODE_KEYS for item in inputs) and not jobs_log.isEnabledFor(logging.INFO):
        return _enqueue_nodes
    return None


def _enqueue_nodes(
    ctx: ShardContext,
    inputs: list[EnqueueItem],
    now_ms: int,
    id_prefix: str,
    template: JobRow,
    outcomes: list[EnqueueOutcome] | None,
) -> list[str]:
    """``enqueue_batch`` for a run's job nodes: their ids and runs, no option set; one insert."""
    # J-38: a given id that exists already, or earlier in the batch, is answered as it is.
    given = [text(item, "id") for item in inputs]
    seen = ctx.lookups.existing([job_id for job_id in given if job_id])
    fresh_ids = iter(wire_format.new_local_ids(given.count(None) + given.count("")))
    out: list[str] = []
    rows: list[tuple[str, str, str | None, str | None]] = []
    for item, given_id in zip(inputs, given, strict=True):
        job_id = given_id or id_prefix + next(fresh_ids)
        out.append(job_id)
        if job_id in seen:
            if outcomes is not None:
                outcomes.append(EnqueueOutcome(job_id, "existing"))
            continue
        seen.add(job_id)
        # ADR-0179: the payload's text as the run stored it, checked as every payload is
        rows.append((job_id, payload_text(item), text(item, "runId"), text(item, "nodeId")))
        if outcomes is not None:
            outcomes.append(EnqueueOutcome(job_id, "created", now_ms))
    ready, lane_at = scheduled_lane(now_ms, DEFAULT_PRIORITY, now_ms)
    ctx.jobs.insert_uniform(template, ready, lane_at, rows, ("run_id", "node_id"))
    _scheduled(ctx, len(rows))
    return out


def _scheduled(ctx: ShardContext, count: int) -> None:
    """ADR-0143: new jobs entered SCHEDULED."""
    if count and telemetry.active is not None:
        telemetry.active.jobs_moved(ctx.binding, JobState.SCHEDULED, count)


def _ignore(_outcome: EnqueueOutcome) -> None:
    """Where outcomes go when the caller asked only for ids."""


def _payload_texts(payloads: list[object]) -> list[str]:
    """Each payload's stored JSON, in one frame: the short ``enqueue_many`` paths (ADR-0120)."""
    try:
        texts = [wire_format.dumps(payload) for payload in payloads]
    except (TypeError, ValueError, RecursionError) as exc:  # the client's words (core/options)
        raise EnqueueError(f"payload must be JSON-serializable: {exc}") from None
    for stored in texts:
        check_payload_text(stored)  # ADR-0133: the same limit as every other enqueue path
    return texts


def job_template(binding: str, now_ms: int) -> JobRow:
    """The row of a new SCHEDULED job with every option at its default; no id, no payload yet."""
    # J-30
    return {
        "id": "",  # each job's own, set by new_job_row or insert_uniform
        "binding": binding,
        "state": "SCHEDULED",
        "priority": DEFAULT_PRIORITY,
        "attempts": 0,
        "max_attempts": DEFAULT_MAX_ATTEMPTS,
        "concurrency_key": None,
        "unique_key": None,
        "guarantee": DEFAULT_GUARANTEE,
        "timeout_ms": DEFAULT_TIMEOUT_MS,
        "backoff": DEFAULT_BACKOFF_TEXT,
        "run_after": now_ms,
        "created_at": now_ms,
        "updated_at": now_ms,
        "dispatched_at": None,
        "heartbeat_at": None,
        "progress": None,
        "payload": "null",
        "result": None,
        "run_id": None,
        "node_id": None,
        "expires_at": None,
        "traceparent": None,
        "cancel_requested_at": None,
        "version": seq_floor(now_ms),
    }
