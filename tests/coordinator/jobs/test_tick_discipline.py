"""Alarm discipline, tick failure (J-31, J-160, J-161, J-164), expired reservations swept (J-170)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS
from tsumugi.errors import EnqueueError
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.testing.fakes import FakeAlarm, FakeQueue, FakeReadModel

from .conftest import START, Harness


class BrokenQueue:
    async def send_batch(self, messages: object) -> None:
        raise RuntimeError("queue down")


async def test_alarms_only_move_earlier(h: Harness) -> None:
    # J-160
    await h.enqueue(delayMs=10_000)
    assert h.alarm.at == START  # J-31
    job_id = await h.enqueue()
    await h.tick()
    await h.tick_at(START + FIRST_PROJECTION_DELAY_MS)  # ADR-0119: the new jobs' first projection
    assert h.alarm.at == START + 10_000
    await h.shard.cancel(job_id)  # asks for now + grace, later than the armed alarm
    assert h.alarm.at == START + 10_000


async def test_failed_send_leaves_jobs_queued_and_retries_the_tick(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # J-161: QUEUED before the send, so the reaper recovers; J-164: re-armed 5 s later
    job_id = await h.enqueue()
    h.shard.ctx.queue = BrokenQueue()
    with caplog.at_level(logging.ERROR, logger="tsumugi"):
        await h.tick()
    assert "tsumugi: tick failed" in caplog.text
    assert await h.state(job_id) == "QUEUED"
    assert h.alarm.at == START + 5000


async def test_unserializable_payload_fails_the_whole_group(h: Harness) -> None:
    # J-27, J-39: one synchronous pass, so nothing of the group is stored
    with pytest.raises(EnqueueError):
        await h.shard.enqueue_many(
            [{"binding": "MAIL", "payload": 1}, {"binding": "MAIL", "payload": {1, 2}}]
        )
    assert (await h.shard.diagnostics())["active"] == 0


async def test_sweep_drops_expired_reservations(h: Harness) -> None:
    # J-170: expired unique-key reservations are deleted in the sweep step
    await h.enqueue(uniqueKey="u", uniqueForMs=10)
    await h.tick_at(START + 10)
    sql = h.shard.ctx.sql
    assert sql.execute("SELECT count(*) FROM unique_key") == [(0,)]


async def test_progress_is_projected_after_heartbeat(h: Harness) -> None:
    # J-66: the heartbeat arms the alarm for now, so the dashboard shows progress
    job_id = await h.enqueue()
    await h.tick()
    h.clock.advance(50)
    await h.shard.heartbeat(job_id, 0.25)
    assert h.alarm.at == START + 50
    await h.tick()
    assert h.snap(job_id)["progress"] == 0.25


class RecordingMetrics:
    def __init__(self) -> None:
        self.states: list[str] = []

    async def write(self, snapshots: object) -> int:
        self.states += [s["state"] for s in snapshots]  # type: ignore[attr-defined]
        return len(self.states)


async def test_metrics_get_the_projected_snapshots() -> None:
    # J-194: written from the same snapshots, after the outbox moved
    metrics = RecordingMetrics()
    alarm, queue = FakeAlarm(), FakeQueue()
    clock = FixedClock(START)
    shard = JobShard("M#0", SqliteExecutor(), clock=clock, alarm=alarm, queue=queue, metrics=metrics)
    [settled, slow] = await shard.enqueue_many([{"binding": "M", "payload": 1}, {"binding": "M"}])
    await shard.alarm()
    await shard.report(settled, {"ok": True})
    await shard.alarm()
    assert metrics.states == ["COMPLETED"]  # ADR-0119: it settled before its first projection was due
    clock.set(START + FIRST_PROJECTION_DELAY_MS)
    await shard.alarm()
    await shard.report(slow, {"ok": True})
    await shard.alarm()
    assert metrics.states == ["COMPLETED", "QUEUED", "COMPLETED"]
    assert (await shard.diagnostics())["outbox"] == 0


class HeldReadModel(FakeReadModel):
    """A read model whose next upsert waits until the test lets it finish."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def upsert_jobs(self, snapshots: Any) -> None:
        self.entered.set()
        await self.release.wait()
        await super().upsert_jobs(snapshots)


async def test_an_enqueue_while_the_tick_awaits_the_read_model_keeps_its_wake_up(h: Harness) -> None:
    # J-31, J-160: a shard is called while its tick awaits another service; the job enqueued then, in the
    # tick's own millisecond, is dispatched at once rather than when the tick's next wake-up falls due.
    done = await h.enqueue()
    await h.tick()
    await h.shard.report(done, {"ok": True, "result": None, "attempt": 1})
    held = HeldReadModel()
    h.shard.ctx.read_model = held
    h.clock.set(START + 5)
    tick = asyncio.create_task(h.tick())  # projects the completed job, and waits in the read model
    await held.entered.wait()
    waiting = await h.enqueue()
    held.release.set()
    await tick
    assert h.alarm.at == START + 5
    assert [m["jobId"] for m in await h.tick()] == [waiting]
