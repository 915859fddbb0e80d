"""Cancel, retry, reschedule, bulk (J-130..J-135, J-41 expire)."""

from __future__ import annotations

import pytest

from tsumugi.coordinator.mutation_result import DONE, INVALID_STATE, REQUESTED, MutationResult
from tsumugi.errors import UnknownMutationError

from .conftest import START, Harness

GONE = {"ok": False, "reason": "gone"}
INVALID = {"ok": False, "reason": "invalid-state"}


async def test_cancel_scheduled_is_immediate(h: Harness) -> None:
    # E10, J-130
    job_id = await h.enqueue(delayMs=10_000)
    assert await h.shard.cancel(job_id) == {"ok": True}
    assert await h.state(job_id) == "CANCELLED"
    assert await h.shard.cancel(job_id) == INVALID
    assert await h.shard.cancel("MAIL#0:missing") == GONE


async def test_cancel_running_records_a_request(h: Harness) -> None:
    # J-135: requested, the performer learns it through heartbeat, a failure then cancels
    job_id = await h.enqueue()
    await h.tick()
    assert await h.shard.cancel(job_id) == {"ok": True, "requested": True}
    assert await h.state(job_id) == "QUEUED"
    assert await h.shard.heartbeat(job_id) == {"ok": True, "cancelRequested": True}
    await h.shard.report(job_id, {"ok": False, "error": "cancelled"})
    assert await h.state(job_id) == "CANCELLED"
    await h.shard.report(job_id, {"ok": True})  # reports after CANCELLED are discarded
    assert await h.state(job_id) == "CANCELLED"


async def test_success_after_request_completes(h: Harness) -> None:
    # J-135 [INF]: the work happened
    job_id = await h.enqueue()
    await h.tick()
    await h.shard.cancel(job_id)
    await h.shard.report(job_id, {"ok": True, "result": 1})
    assert await h.state(job_id) == "COMPLETED"
    assert await h.shard.cancel(job_id) == INVALID


async def test_unanswered_request_cancels_after_grace(h: Harness) -> None:
    # J-135: no report within reaper_grace_ms of the request -> CANCELLED
    job_id = await h.enqueue(timeoutMs=600_000)
    await h.tick()
    await h.tick_at(START + 1000)  # ADR-0119: the new job's first projection is due now
    await h.shard.cancel(job_id)
    assert h.alarm.at == START + 1000 + 30_000
    await h.tick_at(START + 1000 + 29_999)
    assert await h.state(job_id) == "QUEUED"
    await h.tick_at(START + 1000 + 30_000)
    assert await h.state(job_id) == "CANCELLED"


async def test_unclaimed_at_most_once_cancels_at_once(h: Harness) -> None:
    # J-135: the later claim loses
    job_id = await h.enqueue(guarantee="at-most-once")
    await h.tick()
    assert await h.shard.cancel(job_id) == {"ok": True}
    assert await h.shard.claim(job_id) is False


async def test_manual_retry_keeps_attempts(h: Harness) -> None:
    # E11, J-132, J-131
    job_id = await h.enqueue(maxAttempts=1)
    await h.tick()
    assert await h.shard.retry(job_id) == INVALID
    await h.shard.report(job_id, {"ok": False, "error": "x"})
    assert await h.shard.retry(job_id) == {"ok": True}
    [message] = await h.tick()
    assert message["attempt"] == 2
    await h.shard.report(job_id, {"ok": False, "error": "y"})
    assert await h.state(job_id) == "FAILED"
    assert await h.shard.retry("MAIL#0:missing") == GONE


async def test_reschedule(h: Harness) -> None:
    # E12, J-133
    job_id = await h.enqueue(delayMs=60_000)
    assert await h.shard.reschedule(job_id, run_at=START + 10, priority=4) == {"ok": True}
    assert await h.tick() == []
    [message] = await h.tick_at(START + 10)
    assert message["jobId"] == job_id
    assert await h.shard.reschedule(job_id, delay_ms=5) == INVALID  # QUEUED
    assert await h.shard.reschedule("MAIL#0:missing", delay_ms=5) == GONE
    later = await h.enqueue()
    assert await h.shard.reschedule(later, delay_ms=1000) == {"ok": True}
    assert await h.tick() == []


async def test_mutate_many(h: Harness) -> None:
    # J-134
    a, b = await h.enqueue(), await h.enqueue()
    await h.shard.cancel(b)
    result = await h.shard.mutate_many("cancel", [a, b, "MAIL#0:gone"])
    assert result == {
        "ok": [a],
        "failed": [{"id": b, "reason": "invalid-state"}, {"id": "MAIL#0:gone", "reason": "gone"}],
    }
    with pytest.raises(UnknownMutationError):
        await h.shard.mutate_many("explode", [a])


async def test_expire_from_consumer_and_tick(h: Harness) -> None:
    # J-41: consumer-side expire, and the tick cancels expired SCHEDULED jobs
    queued = await h.enqueue(expiresInMs=100)
    await h.tick()
    assert await h.shard.expire(queued) is True
    assert await h.state(queued) == "CANCELLED"
    waiting = await h.enqueue(delayMs=1000, expiresInMs=500)
    assert await h.tick_at(START + 1000) == []
    assert await h.state(waiting) == "CANCELLED"
    plain = await h.enqueue()
    assert await h.shard.expire(plain) is False


def test_mutation_results_keep_their_wire_form() -> None:
    # J-131, J-135: the value inside the coordinator, the same dicts at the RPC edge
    assert DONE.to_wire() == {"ok": True}
    assert REQUESTED.to_wire() == {"ok": True, "requested": True}
    assert MutationResult(False, "gone").to_wire() == GONE
    assert INVALID_STATE.to_wire() == {"ok": False, "reason": "invalid-state"}
