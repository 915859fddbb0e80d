"""Consumer timeouts and the throttled heartbeat (J-64..J-69a, J-74).

The attempt timer, the heartbeat's wait limit and its throttle all run on the injected clock
(ADR-0118): the tests move a FixedClock and let the event loop run, and nothing waits in real time.
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

LOOP_TURNS = 20  # enough turns of the event loop for woken timers, reports and acks to run


async def let_loop_run() -> None:
    """Give every ready task a chance to run; no real time passes."""
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)


async def run(harness: Any, message: Any, performer: type, clock: Any = None, **kwargs: Any) -> None:
    await handle_batch(
        [message],
        harness.env,
        resolver=PerformersResolver({"MAIL": performer}),
        clock=clock or FixedClock(0),
        **kwargs,
    )


def start_batch(harness: Any, message: Any, performer: type, clock: FixedClock) -> asyncio.Future[None]:
    return asyncio.ensure_future(run(harness, message, performer, clock=clock))


async def test_timeout_reports_a_timeout_error_and_leaves_the_performer_running(harness: Any) -> None:
    clock = FixedClock(0)
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    class Slow(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            started.set()
            await release.wait()
            finished.append(ctx.job_id)
            return "late"

    batch = start_batch(harness, harness.message(timeoutMs=20), Slow, clock)
    await started.wait()
    clock.advance(19)
    await let_loop_run()
    assert harness.events == [] and not batch.done()  # J-74: not yet timeout_ms after start
    clock.advance(1)
    await batch
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
    await let_loop_run()
    assert finished == ["MAIL#0:job1"]
    assert len(harness.shard().reports) == 1


async def test_late_failure_of_a_timed_out_performer_is_swallowed(harness: Any) -> None:
    clock = FixedClock(0)
    started, release = asyncio.Event(), asyncio.Event()

    class SlowBoom(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            started.set()
            await release.wait()
            raise RuntimeError("after the timeout")

    batch = start_batch(harness, harness.message(timeoutMs=10), SlowBoom, clock)
    await started.wait()
    clock.advance(10)
    await batch
    release.set()
    await let_loop_run()
    assert len(harness.shard().reports) == 1  # J-74: outcome discarded
    assert "job timed out" in harness.shard().reports[0][1]["error"]


async def test_zero_timeout_disables_the_consumer_timer(harness: Any) -> None:
    clock = FixedClock(0)
    started, release = asyncio.Event(), asyncio.Event()

    class Patient(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            started.set()
            await release.wait()
            return "ok"

    batch = start_batch(harness, harness.message(timeoutMs=0), Patient, clock)
    await started.wait()
    clock.advance(365 * 86_400_000)  # a year on the clock: no timer to fire
    await let_loop_run()
    assert harness.shard().reports == []
    release.set()
    await batch
    assert harness.shard().reports[0][1]["result"] == "ok"  # J-74: timeout_ms <= 0 disables


async def test_a_sync_perform_never_arms_the_timer(harness: Any) -> None:
    clock = FixedClock(0)

    class Instant:
        def perform(self, payload: Any, ctx: JobContext) -> str:
            clock.advance(60_000)  # the whole timeout passes while it runs
            return "done"

    harness.env["MAIL"] = Instant()
    await handle_batch(
        [harness.message(timeoutMs=1_000)], harness.env, resolver=PerformersResolver({}), clock=clock
    )
    # J-60, J-74: a synchronous perform has settled before any timer could start
    assert harness.shard().reports[0][1] == {"ok": True, "result": "done", "attempt": 1}


async def test_accepted_heartbeats_restart_the_timeout(harness: Any) -> None:
    clock = FixedClock(0)

    class Beating(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            for _ in range(4):
                clock.advance(6_000)  # work that takes 6 s on the clock; the throttle lets each call send
                await let_loop_run()  # a due timer would fire here
                await ctx.heartbeat()
            return "survived"

    # 4 x 6 000 ms of work against an 8 000 ms timeout: only the restarts keep it alive (J-68)
    await run(harness, harness.message(timeoutMs=8_000), Beating, clock=clock)
    assert harness.shard().reports[0][1] == {"ok": True, "result": "survived", "attempt": 1}
    assert len(harness.shard().heartbeats) == 4


async def test_rejected_heartbeats_do_not_restart_the_timeout(harness: Any) -> None:
    clock = FixedClock(0)
    harness.shard().heartbeat_answer = {"ok": False, "cancelRequested": False}
    finished = asyncio.Event()

    class Beating(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            for _ in range(4):
                clock.advance(6_000)
                await let_loop_run()
                await ctx.heartbeat()
            finished.set()
            return "survived"

    await run(harness, harness.message(timeoutMs=8_000), Beating, clock=clock)
    ((_, outcome),) = harness.shard().reports
    assert "job timed out" in outcome["error"]  # J-68: only accepted ones count
    # Fired at the second step (12 000 ms): the rejected beat at 6 000 ms did not move the deadline.
    assert clock.now() == 12_000 and len(harness.shard().heartbeats) == 1
    await finished.wait()  # J-74: the performer runs on; its outcome is discarded
    assert len(harness.shard().reports) == 1


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
    clock = FixedClock(0)
    shard = harness.shard()
    shard.heartbeat_gate = asyncio.Event()  # the shard never answers in time
    call = asyncio.ensure_future(make_heartbeat(shard, clock)(0.4))
    await let_loop_run()  # sent at 0 ms
    clock.advance(999)
    await let_loop_run()
    assert not call.done()  # J-65: waits up to 1 000 ms for the answer
    clock.advance(1)
    result = await call
    # J-65: returned without the answer; the call itself was sent
    assert result == HeartbeatResult(cancel_requested=False)
    assert shard.heartbeats == [("MAIL#0:job1", 0.4, 1)]
    shard.heartbeat_gate.set()
    await let_loop_run()


async def test_a_heartbeat_answered_in_time_does_not_wait_for_the_limit(harness: Any) -> None:
    clock = FixedClock(0)
    harness.shard().heartbeat_answer = {"ok": True, "cancelRequested": True}
    result = await make_heartbeat(harness.shard(), clock, wait_ms=10)()
    assert result.cancel_requested is True  # J-65, J-69a: the answer arrived before the limit
    assert clock.now() == 0


async def test_cancel_requested_is_reported_and_sticks(harness: Any) -> None:
    clock = FixedClock(0)
    harness.shard().heartbeat_answer = {"ok": True, "cancelRequested": True}
    heartbeat = make_heartbeat(harness.shard(), clock)
    assert (await heartbeat()).cancel_requested is True  # J-69a
    assert (await heartbeat()).cancel_requested is True  # throttled call keeps the last answer


async def test_plain_boolean_answers_are_understood(harness: Any) -> None:
    clock = FixedClock(0)
    timer = AttemptTimer(1_000, clock, on_fire=lambda: None)
    harness.shard().heartbeat_answer = True  # a v0.6.0-shaped shard (J-66)
    heartbeat = make_heartbeat(harness.shard(), clock, timer=lambda: timer)
    timer.start()
    assert timer.deadline == 1_000
    clock.advance(400)
    await heartbeat()
    assert timer.deadline == 1_400  # J-68: accepted -> restarted for a full timeout_ms
    timer.cancel()


async def test_timer_fires_at_its_deadline_and_restarts_move_it() -> None:
    clock = FixedClock(0)
    fired: list[int] = []
    timer = AttemptTimer(100, clock, on_fire=lambda: fired.append(clock.now()))
    timer.start()
    clock.advance(60)
    timer.restart()  # J-68: now due at 160
    clock.advance(99)
    await let_loop_run()
    assert fired == [] and not timer.fired
    clock.advance(1)
    await let_loop_run()
    assert fired == [160] and timer.fired  # J-74


async def test_fired_timer_is_not_revived() -> None:
    clock = FixedClock(0)
    fired: list[bool] = []
    timer = AttemptTimer(10, clock, on_fire=lambda: fired.append(True))
    timer.start()
    clock.advance(10)
    await let_loop_run()
    assert fired == [True] and timer.fired
    before = timer.deadline
    clock.advance(5)
    timer.restart()
    assert timer.deadline == before  # J-74: no revival after the timeout fired


async def test_a_cancelled_timer_never_fires() -> None:
    clock = FixedClock(0)
    fired: list[bool] = []
    timer = AttemptTimer(10, clock, on_fire=lambda: fired.append(True))
    timer.start()
    await let_loop_run()
    timer.cancel()  # the performer settled first
    clock.advance(1_000)
    await let_loop_run()
    assert fired == [] and not timer.fired


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
    await let_loop_run()
    assert cancelled == ["MAIL#0:job1"]
    assert harness.shard().reports == []
