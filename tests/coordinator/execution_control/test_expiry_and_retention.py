"""Expiry (J-41, J-26, J-29) and per-binding retention with a bounded sweep (J-170, J-171, J-131)."""

from __future__ import annotations

import pytest

from tsumugi.errors import EnqueueError

from .conftest import START, Stack

RETENTION = {"MAIL": {"sweep_after_ms": 1_000, "failed_retention_ms": 5_000}}


async def test_expires_in_ms_cancels_a_job_that_did_not_start_in_time(stack: Stack) -> None:
    # J-41: relative to enqueue time; the tick cancels instead of dispatching, error "job expired"
    job_id = await stack.enqueue(delay_ms=10_000, expires_in_ms=5_000)
    assert await stack.tick_at(START + 10_000) == []
    assert await stack.state(job_id) == "CANCELLED"
    assert stack.snapshot(job_id)["state"] == "CANCELLED"


async def test_expires_at_covers_a_job_waiting_for_retry(stack: Stack) -> None:
    # J-41: jobs waiting for a retry expire too
    job_id = await stack.enqueue(expires_at=START + 5_000, backoff={"kind": "fixed", "delay_ms": 10_000})
    [message] = await stack.tick()
    assert message["expiresAt"] == START + 5_000  # the dispatch message carries it for the consumer
    await stack.report(message, {"ok": False, "error": "transient"})
    assert await stack.state(job_id) == "SCHEDULED"
    assert await stack.tick_at(START + 10_000) == []
    assert await stack.state(job_id) == "CANCELLED"


async def test_a_job_before_its_expiry_runs(stack: Stack) -> None:
    # J-41: only now >= expires_at expires
    job_id = await stack.enqueue(expires_in_ms=5_000, delay_ms=4_999)
    [message] = await stack.tick_at(START + 4_999)
    assert message["jobId"] == job_id


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"run_at": START + 1, "delay_ms": 1}, "run_at and delay_ms are mutually exclusive"),
        (
            {"expires_at": START + 1, "expires_in_ms": 1},
            "expires_at and expires_in_ms are mutually exclusive",
        ),
        ({"expires_in_ms": 0}, "expires_in_ms must be positive"),
    ],
)
async def test_exclusive_or_invalid_timing_raises_and_creates_nothing(
    stack: Stack, options: dict[str, int], message: str
) -> None:
    # J-26, J-29, J-41: a ValueError on the typed path, before any RPC
    with pytest.raises(EnqueueError, match=message) as raised:
        await stack.enqueue(**options)
    assert isinstance(raised.value, ValueError)
    assert stack.shards.shards == {}


async def _finish_all(stack: Stack, ok: bool) -> None:
    """Dispatch every ready job and report the same outcome for each."""
    for message in await stack.tick():
        await stack.report(message, {"ok": True} if ok else {"ok": False, "error": "x"})
    await stack.tick()


async def test_retention_is_per_binding() -> None:
    # J-170, 10.2: MAIL keeps finished jobs 1 s, ALERT the default 5 min
    stack = Stack(bindings=RETENTION)
    mail = await stack.enqueue()
    alert = await stack.enqueue(binding="ALERT")
    await _finish_all(stack, ok=True)
    await stack.tick_at(START + 1_001)
    assert await stack.state(mail) is None
    assert await stack.state(alert) == "COMPLETED"
    await stack.tick_at(START + 300_000)
    assert await stack.state(alert) == "COMPLETED"  # strictly older than the cutoff (J-170)
    await stack.tick_at(START + 300_001)
    assert await stack.state(alert) is None


async def test_failed_retention_is_the_manual_retry_window() -> None:
    # J-170, J-171: FAILED kept failed_retention_ms; then retry answers gone
    stack = Stack(bindings=RETENTION)
    kept = await stack.enqueue(max_attempts=1)
    swept = await stack.enqueue(max_attempts=1)
    await _finish_all(stack, ok=False)
    await stack.tick_at(START + 1_001)
    assert await stack.state(kept) == "FAILED"  # not the 1 s of COMPLETED/CANCELLED
    assert await stack.shard_of(kept).retry(kept) == {"ok": True}
    await stack.tick_at(START + 5_001)
    assert await stack.state(swept) is None
    assert await stack.shard_of(swept).retry(swept) == {"ok": False, "reason": "gone"}


async def test_operations_on_a_swept_job_answer_gone() -> None:
    # J-131: gone, not invalid-state, once the row is deleted; J-186: state_of is None
    stack = Stack(bindings=RETENTION)
    job_id = await stack.enqueue(delay_ms=60_000)
    shard = stack.shard_of(job_id)
    assert await shard.cancel(job_id) == {"ok": True}
    assert await shard.cancel(job_id) == {"ok": False, "reason": "invalid-state"}
    await stack.tick_at(START + 1_001)
    assert await shard.state_of(job_id) is None
    gone = {"ok": False, "reason": "gone"}
    assert await shard.cancel(job_id) == gone
    assert await shard.retry(job_id) == gone
    assert await shard.reschedule(job_id, delay_ms=1) == gone


async def test_the_sweep_is_bounded_per_tick_and_continues() -> None:
    # J-170: at most 200 jobs deleted per tick; J-163: the tick runs again at once while more remain
    stack = Stack(bindings={"MAIL": {"sweep_after_ms": 1_000, "policy": {"concurrency": 1_000}}})
    ids = await stack.app.enqueue_many(stack.env, [{"binding": "MAIL", "payload": n} for n in range(450)])
    shard = stack.shard("MAIL#0")
    for message in await stack.tick():
        await stack.report(message, {"ok": True})
    await stack.tick()
    stack.clock.set(START + 2_000)
    remaining = []
    for _ in range(3):
        assert await stack.shards.run_due_alarms() == 1
        remaining.append(sum([await shard.state_of(job_id) is not None for job_id in ids]))
    assert remaining == [250, 50, 0]
