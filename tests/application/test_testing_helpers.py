"""The shipped performer test helpers (J-78..J-80)."""

from __future__ import annotations

from typing import Any

from tsumugi.performer import JobContext, Performer, SpawnRequest
from tsumugi.testing import create_test_context, fixed_clock, next_attempt, run_performer, schedule


class Working(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> int:
        await ctx.heartbeat(0.5)
        await ctx.heartbeat()
        ctx.spawn("child", "MAIL", {"n": payload})
        return payload * 2


def test_create_test_context_defaults() -> None:
    clock = fixed_clock(1_000)
    ctx = create_test_context(clock=clock)
    # J-78
    assert ctx.job_id == "TEST#0:testjob000000000000000000"
    assert ctx.attempt == 1
    assert ctx.idempotency_key == ctx.job_id
    assert ctx.deadline_at == 61_000
    custom = create_test_context("MAIL#0:abc", attempt=3, idempotency_key="key", deadline_at=5)
    assert (custom.job_id, custom.attempt, custom.idempotency_key, custom.deadline_at) == (
        "MAIL#0:abc",
        3,
        "key",
        5,
    )


async def test_context_records_heartbeats_and_spawns() -> None:
    ctx = create_test_context()
    result = await run_performer(Working(), 21, ctx)
    # J-78: heartbeat records progress (None without argument); spawn records requests
    assert result == {"ok": True, "value": 42}
    assert ctx.heartbeats == [0.5, None]
    assert ctx.spawns == [SpawnRequest("child", "MAIL", {"n": 21})]


async def test_run_performer_never_raises() -> None:
    class Failing:
        def perform(self, payload: Any, ctx: Any) -> None:
            raise KeyError("missing")

    result = await run_performer(Failing(), None)
    # J-79: any object with perform; failures come back as values
    assert result["ok"] is False and isinstance(result["error"], KeyError)
    assert (await run_performer(Working, 1))["value"] == 2  # a Performer class works too


async def test_cancel_request_can_be_simulated() -> None:
    ctx = create_test_context(cancel_requested=True)
    assert (await ctx.heartbeat()).cancel_requested is True  # J-69a


def test_fixed_clock_and_pure_functions() -> None:
    clock = fixed_clock(10)
    # J-80
    assert clock.now() == 10 and clock.advance(5) == 15 and clock.set(100) == 100
    assert next_attempt(1, 3, {"kind": "fixed", "delayMs": 1000}, 0).run_after == 1000
    assert callable(schedule)


def test_remaining_ms_follows_the_injected_clock() -> None:
    # J-75: the remainder before deadline_at, read from the context's clock (a FixedClock in tests)
    clock = fixed_clock(1_000_000)
    ctx = create_test_context(clock=clock)
    assert ctx.remaining_ms() == 60_000
    clock.advance(60_001)
    assert ctx.remaining_ms() == -1  # J-75: 0 or less means stop now
