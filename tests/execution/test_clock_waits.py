"""Waiting on the injected clock (ADR-0118): FixedClock wakes sleepers when moved, SystemClock sleeps."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

import tsumugi.clock
from tsumugi.clock import FixedClock, SystemClock


async def let_loop_run() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_fixed_clock_sleepers_wake_when_advanced_to_their_time() -> None:
    clock = FixedClock(1_000)
    early = asyncio.ensure_future(clock.sleep_until(1_500))
    late = asyncio.ensure_future(clock.sleep_until(2_000))
    await let_loop_run()
    clock.advance(499)
    await let_loop_run()
    assert not early.done() and not late.done()
    clock.advance(1)
    await let_loop_run()
    assert early.done() and not late.done()
    clock.set(5_000)  # a jump wakes everything it passes
    await late


async def test_fixed_clock_sleep_until_a_past_time_returns_at_once() -> None:
    clock = FixedClock(1_000)
    await clock.sleep_until(1_000)
    await clock.sleep_until(0)
    assert clock.now() == 1_000  # nothing moved the clock


async def test_a_cancelled_sleeper_is_forgotten() -> None:
    clock = FixedClock(0)
    sleeper = asyncio.ensure_future(clock.sleep_until(10))
    await let_loop_run()
    sleeper.cancel()
    await let_loop_run()
    assert sleeper.cancelled()
    assert clock.advance(10) == 10  # waking nobody is fine


def test_a_sleeper_left_on_a_closed_loop_does_not_break_the_clock() -> None:
    clock = FixedClock(0)  # e.g. one clock shared by several tests, each with its own loop
    loop = asyncio.new_event_loop()
    sleeper = loop.create_task(clock.sleep_until(10))
    loop.run_until_complete(asyncio.sleep(0))  # the sleeper starts waiting
    loop.close()
    assert clock.advance(10) == 10  # no "Event loop is closed" from the stale waiter
    assert not sleeper.done()


async def test_system_clock_sleeps_on_the_loop_until_the_wall_clock_reaches_the_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall_ms = [10_000]
    slept_s: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept_s.append(seconds)
        # The first wake-up comes 1 ms early (loop clock resolution, drift from wall time).
        wall_ms[0] += round(seconds * 1000) - (1 if len(slept_s) == 1 else 0)

    monkeypatch.setattr(tsumugi.clock, "time", SimpleNamespace(time_ns=lambda: wall_ms[0] * 1_000_000))
    monkeypatch.setattr(tsumugi.clock, "asyncio", SimpleNamespace(sleep=fake_sleep))
    clock = SystemClock()
    await clock.sleep_until(10_250)
    assert slept_s == [0.25, 0.001]  # slept for the rest after the early wake-up
    assert clock.now() == 10_250
    await clock.sleep_until(10_000)
    assert slept_s == [0.25, 0.001]  # a past time does not sleep
