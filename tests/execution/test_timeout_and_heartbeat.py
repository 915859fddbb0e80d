"""Consumer timeouts and the throttled heartbeat (J-64..J-69a, J-74).

Timeouts use tiny real timeouts (tens of ms): the performer runs on the event loop, and the
heartbeat throttle runs on an injected FixedClock, so nothing waits for a wall clock to pass.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.execution import PerformersResolver, handle_batch
from tsumugi.execution.attempt import AttemptHeartbeat, AttemptTimer
from tsumugi.performer import HeartbeatResult, JobContext, Performer


async def run(harness: Any, message: Any, performer: type, clock: Any = None, **kwargs: Any) -> None:
    await handle_batch(
        [message],
        harness.env,
        resolver=PerformersResolver({"MAIL": performer}),
        clock=clock or FixedClock(0),
        **kwargs,
    )


async def test_timeout_reports_a_timeout_error_and_leaves_the_performer_running(harness: Any) -> None:
    release = asyncio.Event()
    finished: list[str] = []

    class Slow(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            await release.wait()
            finished.append(ctx.job_id)
            return "late"

    await run(harness, harness.message(timeoutMs=20), Slow)
    # J-74: exact text, reported as a failure, acked first
    ((_, outcome),) = harness.shard().reports
    assert outcome == {
        "ok": False,
        "error": "TsumugiTimeoutError: job timed out (MAIL#0:job1, 20ms)",
        "attempt": 1,
    }
    assert harness.events == [("ack", "MAIL#0:job1"), ("report", "MAIL#0:job1")]
    # J-74: the performer is not stopped; its late outcome is discarded (no second report)
    release.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert finished == ["MAIL#0:job1"]
    assert len(harness.shard().reports) == 1


async def test_late_failure_of_a_timed_out_performer_is_swallowed(harness: Any) -> None:
    release = asyncio.Event()

    class SlowBoom(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            await release.wait()
            raise RuntimeError("after the timeout")

    await run(harness, harness.message(timeoutMs=10), SlowBoom)
    release.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(harness.shard().reports) == 1  # J-74: outcome discarded


async def test_zero_timeout_disables_the_consumer_timer(harness: Any) -> None:
    class Quick(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            await asyncio.sleep(0.03)  # noqa: sleep-ok  (outlasts a real timer; ADR-0057 timers run on the loop clock)
            return "ok"

    await run(harness, harness.message(timeoutMs=0), Quick)
    assert harness.shard().reports[0][1]["result"] == "ok"  # J-74: timeout_ms <= 0 disables


async def test_accepted_heartbeats_restart_the_timeout(harness: Any) -> None:
    clock = FixedClock(0)

    class Beating(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            for _ in range(4):
                await asyncio.sleep(0.02)  # noqa: sleep-ok  (work measured against the real attempt timer)
                clock.advance(5_000)  # let the throttle send every call
                await ctx.heartbeat()
            return "survived"

    # 4 x 20 ms = 80 ms of work against a 50 ms timeout: only the restarts keep it alive (J-68)
    await run(harness, harness.message(timeoutMs=50), Beating, clock=clock)
    assert harness.shard().reports[0][1] == {"ok": True, "result": "survived", "attempt": 1}
    assert len(harness.shard().heartbeats) == 4


async def test_rejected_heartbeats_do_not_restart_the_timeout(harness: Any) -> None:
    clock = FixedClock(0)
    harness.shard().heartbeat_answer = {"ok": False, "cancelRequested": False}

    class Beating(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            for _ in range(6):
                await asyncio.sleep(0.02)  # noqa: sleep-ok  (work measured against the real attempt timer)
                clock.advance(5_000)
                await ctx.heartbeat()
            return "survived"

    await run(harness, harness.message(timeoutMs=50), Beating, clock=clock)
    assert "job timed out" in harness.shard().reports[0][1]["error"]  # J-68: only accepted ones count


async def test_heartbeat_sends_progress_and_attempt_and_deadline_stays_fixed(harness: Any) -> None:
    clock = FixedClock(1_000)
    deadlines: list[int] = []

    class Progress(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            deadlines.append(ctx.deadline_at)
            await ctx.heartbeat(0.5)
            clock.advance(5_000)
            await ctx.heartbeat(0.9)
            deadlines.append(ctx.deadline_at)

    await run(harness, harness.message(attempt=2, timeoutMs=60_000), Progress, clock=clock)
    assert harness.shard().heartbeats == [("MAIL#0:job1", 0.5, 2), ("MAIL#0:job1", 0.9, 2)]
    assert deadlines == [61_000, 61_000]  # J-68: deadline_at is not refreshed


def make_heartbeat(shard: Any, clock: FixedClock, **kwargs: Any) -> AttemptHeartbeat:
    return AttemptHeartbeat(shard, "MAIL#0:job1", 1, clock, logging.getLogger("tsumugi"), **kwargs)


async def test_throttle_drops_calls_within_5000_ms_of_the_last_sent_one(harness: Any) -> None:
    clock = FixedClock(0)
    heartbeat = make_heartbeat(harness.shard(), clock)
    await heartbeat(0.1)  # J-64: the first call always sends
    clock.advance(4_999)
    await heartbeat(0.2)  # dropped: its progress is lost
    clock.advance(1)
    await heartbeat(0.3)
    assert [p for _, p, _ in harness.shard().heartbeats] == [0.1, 0.3]


async def test_heartbeat_errors_are_logged_and_swallowed(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    harness.shard().heartbeat_answer = ConnectionError("down")
    result = await make_heartbeat(harness.shard(), FixedClock(0))()
    assert result == HeartbeatResult(cancel_requested=False)  # J-65: never raises
    assert "tsumugi: heartbeat failed" in caplog.text


async def test_a_slow_heartbeat_returns_after_the_wait_limit(harness: Any) -> None:
    shard = harness.shard()
    shard.heartbeat_gate = asyncio.Event()  # the shard never answers in time
    heartbeat = make_heartbeat(shard, FixedClock(0), wait_ms=10)
    result = await heartbeat(0.4)
    # J-65: returned without the answer; the call itself was sent
    assert result == HeartbeatResult(cancel_requested=False)
    assert shard.heartbeats == [("MAIL#0:job1", 0.4, 1)]
    shard.heartbeat_gate.set()
    await asyncio.sleep(0)


async def test_cancel_requested_is_reported_and_sticks(harness: Any) -> None:
    clock = FixedClock(0)
    harness.shard().heartbeat_answer = {"ok": True, "cancelRequested": True}
    heartbeat = make_heartbeat(harness.shard(), clock)
    assert (await heartbeat()).cancel_requested is True  # J-69a
    assert (await heartbeat()).cancel_requested is True  # throttled call keeps the last answer


async def test_plain_boolean_answers_are_understood(harness: Any) -> None:
    timer = AttemptTimer(1_000, on_fire=lambda: None)
    harness.shard().heartbeat_answer = True  # a v0.6.0-shaped shard (J-66)
    heartbeat = make_heartbeat(harness.shard(), FixedClock(0), timer=timer)
    timer.start()
    before = timer.deadline
    await asyncio.sleep(0.01)  # noqa: sleep-ok  (lets the loop clock move so a restart is visible)
    await heartbeat()
    assert timer.deadline > before  # J-68: accepted -> restarted
    timer.cancel()


async def test_fired_timer_is_not_revived() -> None:
    fired: list[bool] = []
    timer = AttemptTimer(10, on_fire=lambda: fired.append(True))
    timer.start()
    await asyncio.sleep(0.03)  # noqa: sleep-ok  (lets the real 10 ms timer fire)
    assert fired == [True] and timer.fired
    before = timer.deadline
    timer.restart()
    assert timer.deadline == before  # J-74: no revival after the timeout fired


async def test_cancelling_the_batch_cancels_its_performers(harness: Any) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    class Hanging(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(ctx.job_id)
                raise

    batch = asyncio.ensure_future(run(harness, harness.message(timeoutMs=0), Hanging))
    await started.wait()
    batch.cancel()  # the runtime is shutting down
    with pytest.raises(asyncio.CancelledError):
        await batch
    await asyncio.sleep(0)
    assert cancelled == ["MAIL#0:job1"]
    assert harness.shard().reports == []
