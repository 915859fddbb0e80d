"""What an attempt may need beyond its plain run, which ``consumer`` holds.

The restartable timeout and its report, the throttled heartbeat, the resumption of a perform that
waited, expiry, and the failure reports. A no-op job that settles in its first step reaches none of it.
"""
# J-61, J-64..J-68, J-73, J-74, J-76, J-119

from __future__ import annotations

import asyncio
import logging
import traceback
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from typing import TYPE_CHECKING, Final, TypeVar

from tsumugi.clock import Clock
from tsumugi.core.config_checks import camel_case
from tsumugi.errors import (
    InvalidPayloadError,
    PermanentFailure,
    ResultNotJsonError,
    RetryAfter,
    TsumugiTimeoutError,
)
from tsumugi.execution.messages import FailureReport, SpawnWire
from tsumugi.performer import HeartbeatResult, SpawnRequest
from tsumugi.ports import ShardRpc

if TYPE_CHECKING:
    from tsumugi.execution.consumer import Delivery

__all__ = [
    "HEARTBEAT_MIN_INTERVAL_MS",
    "HEARTBEAT_WAIT_MS",
    "AttemptHeartbeat",
    "AttemptTimer",
    "cancellable",
    "claim",
    "error_text",
    "expire",
    "failure_report",
    "heartbeat_of",
    "not_found_report",
    "on_timeout",
    "resume",
    "spawn_wire",
]

HEARTBEAT_MIN_INTERVAL_MS: Final = 5_000  # J-64: calls closer than this to the last sent one are dropped
HEARTBEAT_WAIT_MS: Final = 1_000  # J-65: a heartbeat never holds the performer up longer than this
_T = TypeVar("_T")
_NOT_FOUND: Final = "performer not found: {} (export it, or add a service binding)"  # J-61
# Raised by the consumer around perform, not inside it: the message says it all, a stack would not help.
_WITHOUT_STACK: Final = (TsumugiTimeoutError, InvalidPayloadError, ResultNotJsonError)


# ---------------------------------------------------------------------- the attempt (J-64..J-74)


class AttemptTimer:
    """The consumer-side timeout of one attempt, on the injected clock; accepted heartbeats restart it.

    One watcher task per attempt sleeps on the clock until ``deadline`` (ADR-0118). A restart
    only moves ``deadline``; the watcher, woken at the old one, sleeps again for the remainder,
    so a chatty heartbeat costs no task churn. When it fires it reports, then cancels ``abort`` if one
    is set (a performer's ``cancel_on_timeout``, ADR-0141).
    """

    # J-74, J-68

    __slots__ = ("_arming", "_clock", "_on_fire", "_watcher", "abort", "deadline", "fired", "timeout_ms")

    def __init__(self, timeout_ms: int, clock: Clock, on_fire: Callable[[], None]) -> None:
        self.timeout_ms = timeout_ms
        self._clock = clock
        self._on_fire = on_fire
        self._watcher: asyncio.Task[None] | None = None
        self._arming: asyncio.Handle | None = None
        self.deadline = 0  # epoch ms on the clock; set when perform starts
        self.fired = False
        self.abort: asyncio.Future[object] | None = None

    def start(self, deadline: int | None = None) -> None:
        """Arm the timer to fire at ``deadline`` (default: ``timeout_ms`` from now)."""
        # The watcher task is made only once the loop runs again, i.e. once perform has yielded: a perform
        # that finishes without waiting costs a cancelled callback, not a task (ADR-0136). ``perform``
        # arms it only once the performer's coroutine has waited (ADR-0159).
        self.deadline = self._clock.now() + self.timeout_ms if deadline is None else deadline
        self._arming = asyncio.get_running_loop().call_soon(self._arm)

    def _arm(self) -> None:
        self._arming = None
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def restart(self) -> None:
        # J-74: a heartbeat accepted after the timeout fired does not revive the timer.
        if (self._watcher is not None or self._arming is not None) and not self.fired:
            self.deadline = self._clock.now() + self.timeout_ms

    def cancel(self) -> None:
        if self._arming is not None:
            self._arming.cancel()
            self._arming = None
        if self._watcher is not None:
            self._watcher.cancel()

    async def _watch(self) -> None:
        while self._clock.now() < self.deadline:
            await self._clock.sleep_until(self.deadline)
        self.fired = True
        self._on_fire()
        if self.abort is not None:
            self.abort.cancel(f"the attempt timed out after {self.timeout_ms}ms")


class AttemptHeartbeat:
    """``ctx.heartbeat`` for one attempt: throttled on the injected clock, never raises."""

    # J-64, J-65

    __slots__ = (
        "_attempt",
        "_cancel_requested",
        "_clock",
        "_job_id",
        "_last_sent_at",
        "_log",
        "_shard",
        "_timer",
        "_wait_ms",
    )

    def __init__(
        self,
        shard: ShardRpc,
        job_id: str,
        attempt: int | None,
        clock: Clock,
        log: logging.Logger,
        timer: Callable[[], AttemptTimer | None] = lambda: None,
        wait_ms: int = HEARTBEAT_WAIT_MS,
    ) -> None:
        self._shard = shard
        self._job_id = job_id
        self._attempt = attempt
        self._clock = clock
        self._log = log
        self._timer = timer
        self._wait_ms = wait_ms
        self._last_sent_at: int | None = None
        self._cancel_requested = False

    async def __call__(self, progress: object = None) -> HeartbeatResult:
        now = self._clock.now()
        if self._last_sent_at is not None and now - self._last_sent_at < HEARTBEAT_MIN_INTERVAL_MS:
            return HeartbeatResult(self._cancel_requested)  # J-64: dropped, progress lost
        self._last_sent_at = now
        try:
            call = asyncio.ensure_future(self._shard.heartbeat(self._job_id, progress, self._attempt))
            # J-65: the wait limit runs on the injected clock too (ADR-0118).
            limit = asyncio.ensure_future(self._clock.sleep_until(now + self._wait_ms))
            try:
                await asyncio.wait((call, limit), return_when=asyncio.FIRST_COMPLETED)
            finally:
                limit.cancel()
            if not call.done():
                call.add_done_callback(self._late_answer)  # J-65: return anyway, keep the call going
                return HeartbeatResult(self._cancel_requested)
            self._accept(call.result())
        except Exception:
            self._log.warning("tsumugi: heartbeat failed", exc_info=True)
        return HeartbeatResult(self._cancel_requested)

    def _accept(self, answer: object) -> None:
        if isinstance(answer, Mapping):
            accepted = bool(answer.get("ok"))
            self._cancel_requested = self._cancel_requested or bool(answer.get("cancelRequested"))
        else:
            accepted = bool(answer)  # v0.6.0 shards answer a plain boolean (J-66)
        timer = self._timer()  # the attempt's timer, made once its perform first waited
        if accepted and timer is not None:
            timer.restart()  # J-68 (a)

    def _late_answer(self, call: asyncio.Future[_T]) -> None:
        if not call.cancelled() and call.exception() is not None:
            self._log.warning("tsumugi: heartbeat failed", exc_info=call.exception())


@types.coroutine
def resume(pending: Coroutine[object, object, object], waits_on: object) -> Generator[object, object, object]:
    """The rest of ``pending``, whose first step yielded ``waits_on``: what ``await`` would do from there."""
    while True:
        try:
            sent = yield waits_on
        except GeneratorExit:
            pending.close()
            raise
        except BaseException as error:  # thrown in by the task (a cancellation): passed on
            try:
                waits_on = pending.throw(error)
            except StopIteration as done:
                return done.value
        else:
            try:
                waits_on = pending.send(sent)
            except StopIteration as done:
                return done.value


async def cancellable(pending: Awaitable[object], timer: AttemptTimer) -> object:
    inner = asyncio.ensure_future(pending)
    timer.abort = inner
    timer.start()
    try:
        return await inner
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if timer.fired and inner.cancelled() and (current is None or current.cancelling() == 0):
            return None  # the timer cancelled the performer, not someone this task
        raise
    finally:
        timer.cancel()


# ---------------------------------------------------------------------- the report (J-119, J-73, J-76)
def error_text(error: BaseException) -> str:
    """The attempt's error text: the Python traceback; the shard truncates it."""
    # J-73 [PORT]
    if isinstance(error, _WITHOUT_STACK):
        return f"{type(error).__name__}: {error}"
    try:
        return "".join(traceback.format_exception(error))
    except Exception:
        return f"{type(error).__name__}: {error}"


def failure_report(error: BaseException, attempt: int | None, now_ms: int) -> FailureReport:
    """``{ok: false, error, retry?, attempt}``; a performer's retry signal becomes data."""
    # J-76
    outcome: FailureReport = {"ok": False, "error": error_text(error)}
    if isinstance(error, PermanentFailure):
        outcome["retry"] = {"kind": "never"}
    elif isinstance(error, RetryAfter):
        at = error.at if error.at is not None else now_ms + (error.delay_ms or 0)
        outcome["retry"] = {"kind": "at", "at": at}
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def not_found_report(binding: str, attempt: int | None) -> FailureReport:
    outcome: FailureReport = {"ok": False, "error": _NOT_FOUND.format(binding)}
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def spawn_wire(spawn: SpawnRequest, defaults: Mapping[str, object] | None) -> SpawnWire:
    wire: SpawnWire = {"id": spawn.id, "binding": spawn.binding, "payload": spawn.payload}
    options: dict[str, object] = dict(defaults or {})
    for key, value in spawn.options.items():
        name = camel_case(key)
        if value is not None or name not in options:  # None is "not given" (J-28): the default stays
            options[name] = _option_wire(value)
    if options:
        wire["options"] = options
    return wire


def _option_wire(value: object) -> object:
    to_wire = getattr(value, "to_wire", None)  # backoff objects (J-100)
    return to_wire() if callable(to_wire) else value


# ---------------------------------------------------------------------- timeouts and expiry (J-74, J-41)
_LINGERING: Final[set[asyncio.Task[None]]] = set()  # timed-out performers still running (J-74)


def on_timeout(
    delivery: Delivery, shard: ShardRpc, job_id: str, attempt: int | None, timeout_ms: int
) -> None:
    """Report the timeout now; the performer's task keeps running and is kept referenced."""
    # J-74
    if delivery.task is not None:
        _LINGERING.add(delivery.task)
        delivery.task.add_done_callback(_LINGERING.discard)
    error = TsumugiTimeoutError(job_id, timeout_ms)
    reporter = asyncio.get_running_loop().create_task(
        _report_timeout(delivery, shard, job_id, error, attempt)
    )
    _LINGERING.add(reporter)
    reporter.add_done_callback(_LINGERING.discard)


async def _report_timeout(
    delivery: Delivery, shard: ShardRpc, job_id: str, error: TsumugiTimeoutError, attempt: int | None
) -> None:
    try:
        delivery.ack()
        outcome = failure_report(error, attempt, delivery.batch.clock.now())
        if delivery.trace is not None:
            delivery.trace.end(outcome, delivery.batch.clock.now(), error)
        await delivery.batch.report(shard, job_id, outcome)
    finally:
        delivery.settle()


async def expire(delivery: Delivery, shard: ShardRpc, job_id: str) -> None:
    """The job is past ``expiresAt``: the shard cancels it, and the message is acked without a run."""
    try:
        await shard.expire(job_id)
    except Exception:
        # The tick cancels expired SCHEDULED jobs itself if this call is lost (J-41).
        delivery.batch.log.error("tsumugi: expire failed (%s)", job_id, exc_info=True)
    delivery.ack()


async def claim(
    delivery: Delivery, shard: ShardRpc, job_id: str, attempt: int | None, expires_at: int | None
) -> bool:
    """An at-most-once attempt claims its job first; False when it must not run (acked, maybe reported)."""
    # J-107
    batch = delivery.batch
    try:
        won = await shard.claim(job_id)
    except Exception as error:
        delivery.ack()  # the performer did not run; the claim failure is the attempt's failure
        await batch.report(shard, job_id, failure_report(error, attempt, batch.clock.now()))
        return False
    if not won:
        delivery.ack()  # a duplicate delivery lost the claim: no run, no report
        return False
    if expires_at is not None and batch.clock.now() >= expires_at:
        await expire(delivery, shard, job_id)  # J-41: checked again after the claim
        return False
    return True


async def heartbeat_of(
    delivery: Delivery, shard: ShardRpc, job_id: str, attempt: int | None, progress: object = None
) -> HeartbeatResult:
    """``ctx.heartbeat`` of ``delivery`` (``Delivery.beat``): the throttle is made on the first call."""
    if delivery.heartbeat is None:
        batch = delivery.batch
        delivery.heartbeat = AttemptHeartbeat(
            shard,
            job_id,
            attempt,
            batch.clock,
            batch.log,
            delivery.current_timer,
            batch.heartbeat_wait_ms,
        )
    return await delivery.heartbeat(progress)
