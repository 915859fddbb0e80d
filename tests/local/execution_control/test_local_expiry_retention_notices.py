"""End to end on the local runtime: expiry, retention, notices (J-41, J-42, J-131, J-170, J-171, J-180,
J-180a)."""

from __future__ import annotations

from typing import Any

from .conftest import START, TRACEPARENT, MakeLocal

FAILURE_FIELDS = {
    "jobId",
    "binding",
    "state",
    "attempts",
    "maxAttempts",
    "error",
    "runId",
    "nodeId",
    "failedAt",
}


async def test_a_job_that_cannot_start_before_its_expiry_is_cancelled(local: MakeLocal) -> None:
    # J-41: the tick cancels an expired SCHEDULED job instead of dispatching it
    app = await local()
    job_id = await app.enqueue(delay_ms=10_000, expires_in_ms=5_000)
    await app.advance(10_000)
    await app.settled(job_id, "CANCELLED")
    assert app.record.of("MAIL") == []


async def test_a_message_that_waited_past_expiry_is_not_run(local: MakeLocal) -> None:
    # J-41: the consumer checks expiresAt right before running, asks the shard to expire and acks
    app = await local(runtime={"batch_size": 1, "max_concurrency": 1})
    blocker = await app.enqueue(payload={"gate": "hold"})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the blocker to start")
    expiring = await app.enqueue(payload={"n": 2}, expires_in_ms=1_000)
    await app.until(lambda: app.runtime.queue.depth() == 1, "the expiring job to wait in the queue")
    app.clock.advance(1_000)  # its message now sits in the queue past expiry
    app.open("hold")
    await app.settled(blocker, "COMPLETED")
    await app.settled(expiring, "CANCELLED")
    assert [s.job_id for s in app.record.of("MAIL")] == [blocker]


async def test_finished_jobs_are_swept_per_binding_and_then_answer_gone(local: MakeLocal) -> None:
    # J-170, J-171, J-131: COMPLETED after sweep_after_ms, FAILED after failed_retention_ms, then gone
    app = await local(bindings={"MAIL": {"sweep_after_ms": 1_000, "failed_retention_ms": 10_000}})
    done = await app.enqueue()
    failed = await app.enqueue(payload={"fail": "x"}, max_attempts=1)
    other = await app.enqueue(binding="ALERT")
    for job_id, state in [(done, "COMPLETED"), (failed, "FAILED"), (other, "COMPLETED")]:
        await app.settled(job_id, state)
    await app.advance(1_001)
    await app.settled(done, None)
    assert await app.state(failed) == "FAILED" and await app.state(other) == "COMPLETED"
    await app.advance(9_000)
    await app.settled(failed, None)
    shard = app.app.shard_for(app.env, "MAIL")
    assert await shard.retry(failed) == {"ok": False, "reason": "gone"}
    assert await shard.cancel(done) == {"ok": False, "reason": "gone"}
    assert await app.state(other) == "COMPLETED"  # ALERT keeps the default 5 minutes


async def test_failure_notice_reaches_the_destination_performer(local: MakeLocal) -> None:
    # J-180: exactly the FailureNotice fields, as a job of the destination binding
    app = await local(on_failure="ALERT")
    job_id = await app.enqueue(payload={"fail": "boom"}, max_attempts=1)
    await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice")
    [notice] = app.record.of("ALERT")
    assert notice.job_id.startswith("ALERT#0:")
    assert set(notice.payload) == FAILURE_FIELDS
    payload = notice.payload
    assert (payload["jobId"], payload["binding"], payload["state"]) == (job_id, "MAIL", "FAILED")
    assert (payload["attempts"], payload["maxAttempts"], payload["failedAt"]) == (1, 1, START)
    assert payload["error"].rstrip().endswith("RuntimeError: boom")  # J-73: the last attempt's error
    assert (payload["runId"], payload["nodeId"]) == (None, None)


async def test_notice_destination_failures_are_not_notified(local: MakeLocal) -> None:
    # J-180: no loops
    app = await local(on_failure="ALERT")
    job_id = await app.enqueue(binding="ALERT", payload={"fail": "x"}, max_attempts=1)
    await app.settled(job_id, "FAILED")
    later = await app.enqueue()
    await app.settled(later, "COMPLETED")
    assert [s.job_id for s in app.record.of("ALERT")] == [job_id]


async def test_settled_notices_for_the_listed_states_only(local: MakeLocal) -> None:
    # J-180a: SettledNotice with the result for COMPLETED; CANCELLED not listed -> no notice
    app = await local(on_settled={"binding": "AUDIT", "states": ["COMPLETED"]})
    done = await app.enqueue(payload={"result": {"sent": 3}})
    cancelled = await app.enqueue(delay_ms=60_000)
    assert await app.app.shard_for(app.env, "MAIL").cancel(cancelled) == {"ok": True}
    await app.until(lambda: len(app.record.of("AUDIT")) == 1, "the settled notice")
    [notice] = app.record.of("AUDIT")
    assert notice.payload == {
        "jobId": done,
        "binding": "MAIL",
        "state": "COMPLETED",
        "attempts": 1,
        "maxAttempts": 3,
        "error": None,
        "result": {"sent": 3},
        "runId": None,
        "nodeId": None,
        "settledAt": START,
    }


async def test_on_enqueue_fills_unset_options_but_not_notice_jobs(local: MakeLocal) -> None:
    # J-42: caller wins, defaults fill the rest, notice jobs get none
    def defaults(item: dict[str, Any]) -> dict[str, Any]:
        return {"timeout_ms": 5_000, "traceparent": TRACEPARENT, "max_attempts": 1}

    app = await local(on_failure="ALERT", on_enqueue=defaults)
    job_id = await app.enqueue(payload={"fail": "x"}, timeout_ms=7_000)
    await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice")
    [attempt] = app.record.of("MAIL")
    assert (attempt.deadline_at - START, attempt.traceparent) == (7_000, TRACEPARENT)
    assert await app.state(job_id) == "FAILED"  # max_attempts 1 came from the defaults
    [notice] = app.record.of("ALERT")
    assert notice.deadline_at - START == 60_000  # the default timeout, not on_enqueue's


async def test_a_notice_attempt_sees_the_traceparent_of_the_failed_job(local: MakeLocal) -> None:
    # issue item 8: traceparent carried through enqueue, dispatch, the attempt and its notices
    app = await local(on_failure="ALERT")
    await app.enqueue(payload={"fail": "x"}, max_attempts=1, traceparent=TRACEPARENT)
    await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice")
    assert app.record.of("ALERT")[0].traceparent == TRACEPARENT
