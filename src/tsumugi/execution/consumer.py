"""The queue consumer: run each dispatched attempt and report it to its shard.

Every message is acked, always, and before its report: retries live in the shard (ADR-0004).
All messages of a batch run concurrently, one task each; a performer instance is resolved once per
binding per batch. Attempt timeouts and heartbeat waits run on the injected clock (ADR-0118).
"""
# J-116..J-119, J-118

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Final, cast

from tsumugi import telemetry
from tsumugi.client import SHARD_NAMESPACE, env_binding
from tsumugi.clock import Clock, SystemClock
from tsumugi.core.defaults import DEFAULT_TIMEOUT_MS  # J-110: when a dispatch message carries no timeoutMs
from tsumugi.core.wire_format import parse_job_id, shard_name_of, validate_local_id
from tsumugi.errors import InvalidPayloadError, ResultNotJsonError
from tsumugi.execution.attempt import (
    HEARTBEAT_WAIT_MS,
    AttemptHeartbeat,
    AttemptTimer,
    claim,
    expire,
    failure_report,
    heartbeat_of,
    not_found_report,
    on_timeout,
)
from tsumugi.execution.messages import AttemptReport, DispatchMessage
from tsumugi.execution.perform import perform, success_report
from tsumugi.logging import jobs_log, log_event
from tsumugi.payloads import PerformerTypes, dump_result, types_of
from tsumugi.performer import HeartbeatResult, JobContext, Performer, Performs, has_perform
from tsumugi.ports import PerformerResolver, QueueMessage, ShardNamespace, ShardRpc, reports_later

__all__ = ["DEFAULT_TIMEOUT_MS", "Delivery", "handle_batch", "perform", "success_report"]

_log: Final = logging.getLogger("tsumugi")
# Python 3.12 starts a task eagerly on request: its first step runs in the constructor, as the task.
EAGER_TASKS: Final = sys.version_info >= (3, 12)


class _Resolved:
    """A binding's performer for one batch, with what its class declares (ADR-0140, ADR-0141)."""

    __slots__ = ("cancel_on_timeout", "performer", "types")

    def __init__(self, performer: Performs, known: Mapping[type, PerformerTypes]) -> None:
        self.performer = performer
        # A registered class's types were read when the app was defined; a service binding's are untyped.
        types = known.get(type(performer))
        self.types: PerformerTypes = types if types is not None else types_of(type(performer))
        # Only a Performer of this process can be cancelled: a service binding's lives elsewhere.
        cancels = isinstance(performer, Performer) and type(performer).cancel_on_timeout is True
        self.cancel_on_timeout = cancels


class _Batch:
    """What every message of one batch shares: the shard namespace, the clock, resolved performers."""

    def __init__(
        self,
        env: object,
        resolver: PerformerResolver,
        clock: Clock,
        log: logging.Logger,
        heartbeat_wait_ms: int,
        pending: int,
        spawn_defaults: Mapping[str, Mapping[str, object]] | None,
        performer_types: Mapping[type, PerformerTypes],
    ) -> None:
        self.env = env
        self.namespace: ShardNamespace | None = env_binding(env, SHARD_NAMESPACE)
        self.resolver = resolver
        self.clock = clock
        self.log = log
        self.heartbeat_wait_ms = heartbeat_wait_ms
        self.performers: dict[str, _Resolved | None] = {}
        self.shards: dict[str, ShardRpc] = {}  # a job id's text before its local id -> its shard's stub
        self.spawn_defaults = spawn_defaults
        self.performer_types = performer_types
        self.pending = pending
        self.all_settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.log_starts = jobs_log.isEnabledFor(logging.INFO)  # ADR-0145: checked once per batch

    def performer(self, binding: str) -> _Resolved | None:
        if binding in self.performers:
            return self.performers[binding]
        candidate = self.resolver.resolve(binding, self.env)
        found = None
        if has_perform(candidate):
            found = _Resolved(candidate, self.performer_types)
        self.performers[binding] = found
        return found

    def shard(self, namespace: ShardNamespace, job_id: str) -> ShardRpc:
        """The stub of the shard that owns ``job_id``; raises for a malformed id, as ``shard_name_of`` does.

        The batch's messages mostly share a shard: its name is parsed and checked once, and the rest of
        each id (its local id) is checked on its own.
        """
        hash_at = job_id.find("#")
        colon_at = job_id.find(":", hash_at + 1) if hash_at >= 0 else -1
        if colon_at >= 0:
            stub = self.shards.get(job_id[:colon_at])
            if stub is not None:
                validate_local_id(job_id[colon_at + 1 :])
                return stub
        stub = namespace.get(shard_name_of(job_id))
        self.shards[job_id[:colon_at]] = stub
        return stub

    async def report(self, shard: ShardRpc, job_id: str, outcome: AttemptReport) -> None:
        try:
            await shard.report(job_id, outcome)
        except Exception:
            # J-118: a lost report leaves the job in flight until the reaper acts; never rethrown.
            self.log.error("tsumugi: report failed (%s)", job_id, exc_info=True)

    def report_later(self, delivery: Delivery, shard: ShardRpc, job_id: str, outcome: AttemptReport) -> bool:
        """Hand the report to a shard that takes it without a wait; ``delivery`` settles when it is
        applied. False when the shard does not, or not now: then the caller awaits ``report``."""
        later = reports_later(shard)
        return later is not None and later.report_later(job_id, outcome, delivery.reported)


class Delivery:
    """One message of a batch; settled once it is acked and its report (if any) was sent."""

    __slots__ = (
        "attempt",
        "batch",
        "heartbeat",
        "job_id",
        "limit_ms",
        "message",
        "settled",
        "shard",
        "task",
        "timer",
        "trace",
    )

    def __init__(self, message: QueueMessage, batch: _Batch) -> None:
        self.message = message
        self.batch = batch
        self.job_id = ""  # the message's job id, once read
        self.shard: ShardRpc | None = None  # its shard, attempt and time limit, once perform starts
        self.attempt: int | None = None
        self.limit_ms = 0
        self.settled = False
        self.task: asyncio.Task[None] | None = None
        self.trace: telemetry.AttemptTrace | None = None  # ADR-0143: set only when telemetry is on
        self.timer: AttemptTimer | None = None  # made once perform waits (ADR-0165)
        self.heartbeat: AttemptHeartbeat | None = None  # made on the performer's first heartbeat

    def current_timer(self) -> AttemptTimer | None:
        return self.timer

    def new_timer(self) -> AttemptTimer:
        """The attempt's timer, made only once perform waits (ADR-0165)."""
        shard, job_id, attempt, limit_ms = self.shard, self.job_id, self.attempt, self.limit_ms
        assert shard is not None  # set before perform starts
        self.timer = AttemptTimer(
            limit_ms, self.batch.clock, lambda: on_timeout(self, shard, job_id, attempt, limit_ms)
        )
        return self.timer

    async def beat(self, progress: object = None) -> HeartbeatResult:
        """``ctx.heartbeat``: the throttle is made on the first call."""
        assert self.shard is not None  # set before perform starts
        return await heartbeat_of(self, self.shard, self.job_id, self.attempt, progress)

    def timed_out(self) -> bool:
        return self.timer is not None and self.timer.fired

    def ack(self) -> None:
        try:
            self.message.ack()
        except Exception:
            self.batch.log.error("tsumugi: ack failed", exc_info=True)

    def reported(self, error: BaseException | None) -> None:
        """The shard's answer to a report handed over with ``report_later``: the delivery is settled."""
        if isinstance(error, Exception):
            # J-118: a lost report leaves the job in flight until the reaper acts; never rethrown.
            self.batch.log.error("tsumugi: report failed (%s)", self.job_id, exc_info=error)
        self.settle()

    def settle(self) -> None:
        if self.settled:
            return
        self.settled = True
        batch = self.batch
        batch.pending -= 1
        if batch.pending == 0 and not batch.all_settled.done():
            batch.all_settled.set_result(None)


async def handle_batch(
    messages: Sequence[QueueMessage],
    env: object,
    *,
    resolver: PerformerResolver,
    clock: Clock | None = None,
    log: logging.Logger = _log,
    heartbeat_wait_ms: int = HEARTBEAT_WAIT_MS,
    spawn_defaults: Mapping[str, Mapping[str, object]] | None = None,
    performer_types: Mapping[type, PerformerTypes] | None = None,
) -> None:
    """Handle one Queue batch concurrently; returns once every message is acked and reported.

    Never raises because of a job. A performer that outlives its timeout keeps running after
    this returns; its outcome is discarded. ``spawn_defaults`` holds, per binding, the class
    default options a spawned child of that binding gets (ADR-0141); ``performer_types`` the declared
    types of the app's performer classes, read once when it was defined (ADR-0140).
    """
    # J-117, J-118, J-74
    if not messages:
        return
    batch = _Batch(
        env,
        resolver,
        clock or SystemClock(),
        log,
        heartbeat_wait_ms,
        len(messages),
        spawn_defaults,
        performer_types or {},
    )
    loop = asyncio.get_running_loop()
    deliveries = [Delivery(message, batch) for message in messages]
    for delivery in deliveries:
        _start(loop, delivery)
    try:
        await batch.all_settled
    except asyncio.CancelledError:
        for delivery in deliveries:
            if delivery.task is not None:
                delivery.task.cancel()  # the runtime is shutting down
        raise


def _start(loop: asyncio.AbstractEventLoop, delivery: Delivery) -> None:
    """The delivery's task; where the platform can, its first step runs now (ADR-0175).

    Most attempts never wait: an eagerly started task runs them to their report here, and is done
    before it was ever scheduled. It is a task all the same, current while its performer runs and with a
    context of its own.
    """
    guarded = _guarded(delivery)
    # Only a plain asyncio loop, as the app runs it: a loop of its own kind, or a task factory set on it
    # (instrumentation), makes its tasks as it always does.
    if EAGER_TASKS and isinstance(loop, asyncio.BaseEventLoop) and loop.get_task_factory() is None:
        delivery.task = asyncio.Task(guarded, loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
    else:
        delivery.task = loop.create_task(guarded)


async def _guarded(delivery: Delivery) -> None:
    handed_over = False
    try:
        handed_over = await _handle_one(delivery)
    except Exception:
        delivery.batch.log.error("tsumugi: handleOne rejected", exc_info=True)
        delivery.ack()
    finally:
        if not handed_over:
            delivery.settle()


async def _handle_one(delivery: Delivery) -> bool:
    """One message, up to its report; True when the report was handed over and settles the delivery
    once applied (``report_later``), False when this is done with the delivery."""
    batch = delivery.batch
    body = delivery.message.body
    # A dict, nearly always: the type check spares the ABC check.
    job_id = body.get("jobId") if type(body) is dict or isinstance(body, Mapping) else None
    if not isinstance(job_id, str):
        batch.log.error("tsumugi: invalid dispatch message: jobId is missing")
        delivery.ack()  # J-117: no report; the reaper recovers the job, if any
        return False
    if batch.namespace is None:
        raise LookupError(f"{SHARD_NAMESPACE} is not configured")
    # The shard's message: a mapping with a string jobId (checked above), its other fields as it wrote them,
    # each read where it is used.
    message = cast("DispatchMessage", body)
    delivery.job_id = job_id
    shard = batch.shard(batch.namespace, job_id)
    attempt = message.get("attempt")
    expires_at = message.get("expiresAt")
    if expires_at is not None and batch.clock.now() >= expires_at:
        await expire(delivery, shard, job_id)  # J-41: expired jobs never start
        return False
    if message.get("claimRequired") and not await claim(delivery, shard, job_id, attempt, expires_at):
        return False
    binding = message.get("binding") or parse_job_id(job_id).binding
    if telemetry.active is not None:
        delivery.trace = telemetry.active.attempt(message, binding, job_id, batch.clock.now())
    resolved = batch.performer(binding)
    outcome: AttemptReport | None
    if resolved is None:
        outcome = not_found_report(binding, attempt)  # J-61: an ordinary, retried failure
    else:
        outcome = await _run(delivery, resolved, binding, message, job_id, attempt, shard)
    if outcome is None:
        return False  # timed out: the timer already acked and reported
    delivery.ack()  # J-118: ack before report
    if delivery.trace is not None:
        delivery.trace.end(outcome, batch.clock.now())
    if batch.report_later(delivery, shard, job_id, outcome):
        return True  # ADR-0167: the task ends here; the shard's answer settles the delivery
    await batch.report(shard, job_id, outcome)
    return False


async def _run(
    delivery: Delivery,
    resolved: _Resolved,
    binding: str,
    body: DispatchMessage,
    job_id: str,
    attempt: int | None,
    shard: ShardRpc,
) -> AttemptReport | None:
    batch = delivery.batch
    payload: object = body.get("payload")
    if resolved.types.decodes:  # an untyped payload, or one typed ``object``, is the stored JSON itself
        try:
            payload = resolved.types.decode_payload(binding, payload)  # ADR-0140
        except InvalidPayloadError as error:
            batch.log.warning("tsumugi: perform failed (%s): %s", job_id, error)
            return failure_report(error, attempt, batch.clock.now())  # an ordinary failure, retried
    timeout_ms = body.get("timeoutMs")
    limit_ms: int = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms

    delivery.shard, delivery.attempt, delivery.limit_ms = shard, attempt, limit_ms
    ctx = JobContext(
        job_id=job_id,
        attempt=attempt if isinstance(attempt, int) else 1,
        deadline_at=batch.clock.now() + limit_ms,  # fixed for the attempt (J-68)
        heartbeat=delivery.beat,  # its throttle is made on first use
        traceparent=body.get("traceparent"),
        clock=batch.clock,  # J-75: remaining_ms() on the same clock as deadline_at
    )
    if batch.log_starts:
        log_event(jobs_log, logging.INFO, "job started", binding=binding, job=job_id, attempt=ctx.attempt)
    timing = delivery.new_timer if limit_ms > 0 else None
    pending = perform(resolved.performer, payload, ctx, timing, cancel_on_timeout=resolved.cancel_on_timeout)
    try:
        result = await (pending if delivery.trace is None else delivery.trace.run(pending))
    except Exception as error:
        if delivery.timed_out():
            return None  # J-74: a late outcome is discarded
        batch.log.warning("tsumugi: perform failed (%s)", job_id, exc_info=error)
        return failure_report(error, attempt, batch.clock.now())
    if delivery.timed_out():
        return None
    stored = None  # most performers return nothing: nothing to convert
    if result is not None:
        try:
            stored = dump_result(binding, result, resolved.types)  # ADR-0140: JSON, or a failed attempt
        except ResultNotJsonError as error:
            batch.log.warning("tsumugi: perform failed (%s): %s", job_id, error)
            return failure_report(error, attempt, batch.clock.now())
    return success_report(stored, ctx.spawns, attempt, batch.spawn_defaults)
