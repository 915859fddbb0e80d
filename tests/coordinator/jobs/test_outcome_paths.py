"""Outcome paths through the shard: performer-chosen retries, at-most-once failures, stall notices.

J-76, J-109, J-132, J-180, J-180a, ADR-0045.
"""

from __future__ import annotations

from .conftest import START, Harness


async def test_retry_never_fails_now(h: Harness) -> None:
    # J-76: permanent failure regardless of remaining attempts
    job_id = await h.enqueue(maxAttempts=5)
    await h.tick()
    await h.shard.report(job_id, {"ok": False, "error": "bad input", "retry": {"kind": "never"}})
    assert await h.state(job_id) == "FAILED"


async def test_retry_at_uses_the_given_time(h: Harness) -> None:
    # J-76: this failure's run_after is the given time instead of the backoff
    job_id = await h.enqueue(maxAttempts=5)
    await h.tick()
    await h.shard.report(job_id, {"ok": False, "error": "later", "retry": {"kind": "at", "at": START + 42}})
    await h.tick()
    assert h.snap(job_id)["run_after"] == START + 42
    [message] = await h.tick_at(START + 42)
    assert message["attempt"] == 2


async def test_at_most_once_failure_is_retried(h: Harness) -> None:
    # J-109: the report path ignores the guarantee
    job_id = await h.enqueue(guarantee="at-most-once", backoff={"kind": "fixed", "delayMs": 10})
    await h.tick()
    assert await h.shard.claim(job_id)
    await h.shard.report(job_id, {"ok": False, "error": "raised"})
    [message] = await h.tick_at(START + 10)
    assert message["claimRequired"] is True and message["attempt"] == 2


async def test_stalled_job_notice_and_manual_retry_numbering(h: Harness) -> None:
    # J-180 (STALLED, no recorded error), ADR-0045 (a manual retry runs as attempts + 1)
    job_id = await h.enqueue(guarantee="at-most-once", settings={"onFailure": "ALERT"})
    await h.tick()
    await h.tick_at(START + 90_000)
    assert await h.state(job_id) == "STALLED"
    [notice] = await h.tick()
    assert notice["payload"]["state"] == "STALLED" and notice["payload"]["error"] is None
    assert notice["payload"]["attempts"] == 1
    assert await h.shard.retry(job_id) == {"ok": True}
    [message] = await h.tick()
    assert message["attempt"] == 2


async def test_settled_notices_skip_the_failure_binding(h: Harness) -> None:
    # J-180a: jobs of the on_failure binding are not notified to on_settled
    settings = {"onFailure": "ALERT", "onSettled": {"binding": "AUDIT", "states": ["FAILED", "COMPLETED"]}}
    alert = h.shards.get("ALERT#0")
    [job_id] = await alert.enqueue_many([{"binding": "ALERT", "payload": 1, "maxAttempts": 1}], settings)
    await h.shards.settle()
    [message] = h.queue.take()
    await alert.report(message["jobId"], {"ok": False, "error": "x"})
    await h.shards.settle()
    assert h.queue.take() == []
    assert await alert.state_of(job_id) == "FAILED"


async def test_failed_job_notified_to_both_targets(h: Harness) -> None:
    # J-180a: with both options, FAILED jobs listed in states go to both destinations
    settings = {"onFailure": "ALERT", "onSettled": {"binding": "AUDIT", "states": ["FAILED"]}}
    job_id = await h.enqueue(maxAttempts=1, settings=settings)
    await h.tick()
    await h.shard.report(job_id, {"ok": False, "error": "x"})
    await h.shards.settle()
    bindings = sorted(m["binding"] for m in h.queue.take())
    assert bindings == ["ALERT", "AUDIT"]
