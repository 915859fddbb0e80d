"""``perform`` runs a coroutine's first step itself and arms the timer only if it waits (ADR-0159).

Whatever the performer does after its first wait must reach it and come back exactly as under a plain
``await``: values sent in, errors and cancellations thrown in, its result and its errors out (J-74).
"""

from __future__ import annotations

import asyncio

import pytest

from tsumugi.clock import FixedClock
from tsumugi.execution.attempt import AttemptTimer
from tsumugi.execution.consumer import perform
from tsumugi.performer import JobContext

TIMEOUT_MS = 1_000


class Waits:
    """A performer whose ``perform`` waits on ``gate`` once, then returns or raises what the gate gives."""

    def __init__(self, gate: asyncio.Future[str]) -> None:
        self.gate = gate
        self.seen: list[str] = []

    async def perform(self, payload: object, ctx: JobContext) -> object:
        try:
            value = await self.gate
        except asyncio.CancelledError:
            self.seen.append("cancelled")
            raise
        self.seen.append(value)
        if value == "raise":
            raise ValueError("after the wait")
        return {"got": value}


class NeverWaits:
    async def perform(self, payload: object, ctx: JobContext) -> object:
        return payload


def _attempt(clock: FixedClock) -> tuple[AttemptTimer, JobContext, list[str]]:
    fired: list[str] = []
    timer = AttemptTimer(TIMEOUT_MS, clock, lambda: fired.append("fired"))
    ctx = JobContext(job_id="MAIL#0:a", attempt=1, deadline_at=clock.now() + TIMEOUT_MS, clock=clock)
    return timer, ctx, fired


async def test_a_perform_that_never_waits_never_arms_the_timer() -> None:
    clock = FixedClock(0)
    timer, ctx, _ = _attempt(clock)
    made: list[AttemptTimer] = []

    def new_timer() -> AttemptTimer:
        made.append(timer)
        return timer

    assert await perform(NeverWaits(), {"n": 1}, ctx, new_timer) == {"n": 1}
    assert made == []  # ADR-0165: no timer is even made
    assert timer.deadline == 0  # never started


async def test_a_value_sent_after_the_first_wait_reaches_the_performer() -> None:
    clock = FixedClock(0)
    timer, ctx, _ = _attempt(clock)
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    performer = Waits(gate)
    pending = asyncio.ensure_future(perform(performer, None, ctx, lambda: timer))
    await asyncio.sleep(0)
    assert timer.deadline == ctx.deadline_at  # armed once it waited, at the attempt's deadline (J-68)
    gate.set_result("hello")
    assert await pending == {"got": "hello"}
    assert performer.seen == ["hello"]


async def test_an_error_after_the_first_wait_comes_out_of_perform() -> None:
    clock = FixedClock(0)
    timer, ctx, _ = _attempt(clock)
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    pending = asyncio.ensure_future(perform(Waits(gate), None, ctx, lambda: timer))
    await asyncio.sleep(0)
    gate.set_result("raise")
    with pytest.raises(ValueError, match="after the wait"):
        await pending


async def test_a_cancellation_while_waiting_is_thrown_into_the_performer() -> None:
    clock = FixedClock(0)
    timer, ctx, _ = _attempt(clock)
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    performer = Waits(gate)
    pending = asyncio.ensure_future(perform(performer, None, ctx, lambda: timer))
    await asyncio.sleep(0)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert performer.seen == ["cancelled"]


async def test_a_performer_that_waits_past_its_deadline_times_out() -> None:
    # J-74
    clock = FixedClock(0)
    timer, ctx, fired = _attempt(clock)
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    pending = asyncio.ensure_future(perform(Waits(gate), None, ctx, lambda: timer))
    for _ in range(5):
        await asyncio.sleep(0)
    clock.advance(TIMEOUT_MS)
    for _ in range(5):
        await asyncio.sleep(0)
    assert fired == ["fired"] and timer.fired
    gate.set_result("late")
    assert await pending == {"got": "late"}  # the performer is not stopped; the consumer discards this
