"""The reaper (J-104, J-111..J-113; ADR-0045: a reaped attempt counts as finished)."""

from __future__ import annotations

from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS

from .conftest import START, Harness

DEADLINE = 60_000 + 30_000  # default timeout_ms + reaper_grace_ms


async def test_silent_job_is_dispatched_max_attempts_times_then_fails(h: Harness) -> None:
    # J-112, E7/E8, decision 1 of the spec README: max_attempts dispatches in all
    job_id = await h.enqueue(maxAttempts=3)
    attempts: list[int] = []
    for _ in range(10):
        messages = await h.tick()
        attempts += [m["attempt"] for m in messages]
        if await h.state(job_id) == "FAILED":
            break
        h.clock.advance(DEADLINE)
    assert attempts == [1, 2, 3]
    await h.tick()
    assert h.snap(job_id)["state"] == "FAILED" and h.snap(job_id)["attempts"] == 3


async def test_reaper_deadline_is_inclusive(h: Harness) -> None:
    # J-111: the reaper acts when now >= deadline
    job_id = await h.enqueue()
    await h.tick()
    await h.tick_at(START + FIRST_PROJECTION_DELAY_MS)  # ADR-0119: the new job's first projection
    assert h.alarm.at == START + DEADLINE
    await h.tick_at(START + DEADLINE - 1)
    assert await h.state(job_id) == "QUEUED"
    await h.tick_at(START + DEADLINE)
    assert await h.state(job_id) == "SCHEDULED"


async def test_reaped_job_gets_no_backoff_and_waits_for_next_tick(h: Harness) -> None:
    # J-104, J-113: eligible again on the very next tick, not in the reaping tick
    job_id = await h.enqueue()
    await h.tick()
    messages = await h.tick_at(START + DEADLINE)
    assert messages == [] and h.alarm.at == START + DEADLINE
    [message] = await h.tick()
    assert message["jobId"] == job_id and message["attempt"] == 2


async def test_at_most_once_silent_job_stalls(h: Harness) -> None:
    # J-108, E9
    job_id = await h.enqueue(guarantee="at-most-once", maxAttempts=5)
    await h.tick()
    await h.shard.claim(job_id)
    await h.tick_at(START + DEADLINE)
    assert await h.state(job_id) == "STALLED"
    assert await h.tick_at(START + 10 * DEADLINE) == []


async def test_freed_capacity_is_used_by_other_jobs_in_the_same_tick(h: Harness) -> None:
    # J-113
    await h.enqueue(settings={"policy": {"concurrency": 1}})
    await h.tick()
    other = await h.enqueue(settings={"policy": {"concurrency": 1}})
    assert await h.tick() == []
    messages = await h.tick_at(START + DEADLINE)
    assert [m["jobId"] for m in messages] == [other]
