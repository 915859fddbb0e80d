"""Unit-testing performers without a shard: a recording context, a runner and a fixed clock."""
# J-78..J-80

from __future__ import annotations

import inspect
from typing import Final, Required, TypedDict

from tsumugi.clock import Clock, FixedClock, SystemClock
from tsumugi.core.defaults import DEFAULT_TIMEOUT_MS
from tsumugi.performer import HeartbeatResult, JobContext, Performs

__all__ = [
    "DEFAULT_TEST_JOB_ID",
    "PerformOutcome",
    "TestJobContext",
    "create_test_context",
    "fixed_clock",
    "run_performer",
]

DEFAULT_TEST_JOB_ID: Final = "TEST#0:testjob000000000000000000"  # J-78
DEFAULT_TEST_TIMEOUT_MS: Final = DEFAULT_TIMEOUT_MS  # J-78: deadline_at defaults to now + timeout_ms


class PerformOutcome(TypedDict, total=False):
    """What ``run_performer`` answers: ``{"ok": True, "value": v}`` or ``{"ok": False, "error": e}``."""

    ok: Required[bool]
    value: object
    error: Exception


class TestJobContext(JobContext):
    """A ``JobContext`` whose ``heartbeat`` records progress values and whose ``spawn`` records requests."""

    __test__ = False  # not a pytest test class despite its name
    __slots__ = ("_idempotency_key", "cancel_requested", "heartbeats")

    def __init__(
        self,
        *,
        job_id: str,
        attempt: int,
        deadline_at: int,
        idempotency_key: str,
        traceparent: str | None = None,
        cancel_requested: bool = False,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(
            job_id=job_id, attempt=attempt, deadline_at=deadline_at, traceparent=traceparent, clock=clock
        )
        self._idempotency_key = idempotency_key
        self.heartbeats: list[object] = []
        self.cancel_requested = cancel_requested

    @property
    def idempotency_key(self) -> str:
        return self._idempotency_key

    async def heartbeat(self, progress: object = None) -> HeartbeatResult:
        """Record ``progress`` (None when called without one); answers ``cancel_requested``."""
        self.heartbeats.append(progress)
        return HeartbeatResult(self.cancel_requested)


def create_test_context(
    job_id: str = DEFAULT_TEST_JOB_ID,
    attempt: int = 1,
    idempotency_key: str | None = None,
    deadline_at: int | None = None,
    *,
    traceparent: str | None = None,
    cancel_requested: bool = False,
    clock: Clock | None = None,
) -> TestJobContext:
    """A context for calling ``perform`` directly; ``deadline_at`` defaults to now + 60 000 ms."""
    # J-78
    if deadline_at is None:
        deadline_at = (clock or SystemClock()).now() + DEFAULT_TEST_TIMEOUT_MS
    return TestJobContext(
        job_id=job_id,
        attempt=attempt,
        deadline_at=deadline_at,
        idempotency_key=job_id if idempotency_key is None else idempotency_key,
        traceparent=traceparent,
        cancel_requested=cancel_requested,
        clock=clock,
    )


async def run_performer(
    performer: Performs | type[Performs], payload: object, ctx: JobContext | None = None
) -> PerformOutcome:
    """Call ``perform`` and never raise: ``{"ok": True, "value": v}`` or ``{"ok": False, "error": e}``.

    ``performer`` is any object with a ``perform`` method, or a ``Performer`` class (built without env).
    """
    # J-79
    if isinstance(performer, type):
        performer = performer()
    try:
        value = performer.perform(payload, ctx if ctx is not None else create_test_context())
        if inspect.isawaitable(value):
            value = await value
    except Exception as error:
        return {"ok": False, "error": error}
    return {"ok": True, "value": value}


def fixed_clock(start: int = 1_700_000_000_000) -> FixedClock:
    """A clock with ``now()``, ``advance(ms)`` and ``set(at)`` that moves only when told."""
    # J-80
    return FixedClock(start)
