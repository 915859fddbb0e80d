"""Dispatch, claim, report and heartbeat (J-66..J-73, J-92..J-96, J-107, J-116, J-119, J-161, J-165)."""

from __future__ import annotations

import json

from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS
from tsumugi.core.states import RESULT_NOT_STORED

from .conftest import START, Harness

FIXED = {"kind": "fixed", "delayMs": 1000}


async def test_dispatch_message_shape(h: Harness) -> None:
    # J-116, J-27 (payload parsed), J-40 (traceparent travels)
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    job_id = await h.enqueue(payload={"a": [1, 2]}, timeoutMs=5000, traceparent=tp, guarantee="at-most-once")
    [message] = await h.tick()
    assert message == {
        "jobId": job_id,
        "binding": "MAIL",
        "attempt": 1,
        "payload": {"a": [1, 2]},
        "timeoutMs": 5000,
        "claimRequired": True,
        "expiresAt": None,
        "traceparent": tp,
    }
    assert await h.state(job_id) == "QUEUED"  # J-161: QUEUED before the send
    assert h.snap(job_id)["dispatched_at"] == START


async def test_claim_has_one_winner(h: Harness) -> None:
    # J-107
    job_id = await h.enqueue(guarantee="at-most-once")
    await h.tick()
    assert await h.shard.claim(job_id) is True
    assert await h.shard.claim(job_id) is False
    assert await h.state(job_id) == "RUNNING"


async def test_success_stores_result_and_skips_first_attempt_row(h: Harness) -> None:
    # J-71, J-95, E4, J-165
    job_id = await h.enqueue()
    await h.tick()
    h.clock.advance(10)
    await h.shard.report(job_id, {"ok": True, "result": {"sent": True}, "attempt": 1})
    assert h.alarm.at == START + 10
    await h.tick()
    snap = h.snap(job_id)
    assert (snap["state"], snap["attempts"], snap["result"], snap["attempts_log"]) == (
        "COMPLETED",
        1,
        '{"sent":true}',
        None,
    )


async def test_none_and_oversized_results_store_null(h: Harness) -> None:
    # J-71
    a, b = await h.enqueue(), await h.enqueue()
    await h.tick()
    await h.shard.report(a, {"ok": True, "result": None})
    await h.shard.report(b, {"ok": True, "result": "x" * 9000})
    await h.tick()
    assert h.snap(a)["result"] is None and h.snap(b)["result"] is None
    assert h.snap(b)["state"] == "COMPLETED"


async def test_run_job_with_unstorable_result_fails_the_attempt(h: Harness) -> None:
    # J-72
    job_id = await h.enqueue(runId="r1", nodeId="n1", maxAttempts=1)
    await h.tick()
    await h.shard.report(job_id, {"ok": True, "result": "x" * 9000})
    await h.tick()
    log = json.loads(h.snap(job_id)["attempts_log"])
    assert h.snap(job_id)["state"] == "FAILED" and log[0]["error"] == RESULT_NOT_STORED


async def test_retryable_failure_schedules_with_backoff(h: Harness) -> None:
    # E5, J-94, J-95, J-73, ADR-0047 (the alarm is armed now)
    job_id = await h.enqueue(backoff=FIXED)
    await h.tick()
    h.clock.advance(5)
    await h.shard.report(job_id, {"ok": False, "error": "e" * 3000, "attempt": 1})
    assert h.alarm.at == START + 5
    assert await h.tick() == []
    snap = h.snap(job_id)
    assert (snap["state"], snap["attempts"], snap["run_after"], snap["dispatched_at"]) == (
        "SCHEDULED",
        1,
        START + 1005,
        None,
    )
    [row] = json.loads(snap["attempts_log"])
    assert row == {
        "job_id": job_id,
        "attempt": 1,
        "state": "FAILED",
        "started_at": START,
        "finished_at": START + 5,
        "error": "e" * 2000,
    }
    assert h.alarm.at == START + FIRST_PROJECTION_DELAY_MS  # ADR-0119: the new job's first projection
    assert await h.tick_at(START + FIRST_PROJECTION_DELAY_MS) == []
    assert h.read_model.jobs[job_id]["state"] == "SCHEDULED" and h.alarm.at == START + 1005
    [message] = await h.tick_at(START + 1005)
    assert message["attempt"] == 2  # J-116: attempts + 1


async def test_exhausted_failure_and_attempt_log_newest_first(h: Harness) -> None:
    # E6, J-96: newest first
    job_id = await h.enqueue(backoff=FIXED, maxAttempts=2)
    await h.tick()
    await h.shard.report(job_id, {"ok": False, "error": "one"})
    await h.tick_at(START + 1000)
    await h.shard.report(job_id, {"ok": False, "error": "two"})
    await h.tick()
    snap = h.snap(job_id)
    assert snap["state"] == "FAILED" and snap["attempts"] == 2
    assert [r["error"] for r in json.loads(snap["attempts_log"])] == ["two", "one"]


async def test_reports_for_jobs_not_in_flight_are_ignored(h: Harness) -> None:
    # J-115
    job_id = await h.enqueue()
    await h.shard.report(job_id, {"ok": True, "result": 1})
    assert await h.state(job_id) == "SCHEDULED"
    await h.shard.report("MAIL#0:unknown", {"ok": True})


async def test_stale_report_is_ignored(h: Harness) -> None:
    # ADR-0046: a report naming an earlier attempt does not touch the current one
    job_id = await h.enqueue(timeoutMs=0)
    await h.tick()
    await h.tick_at(START + 30_000)  # reaped (E7)
    [message] = await h.tick()
    assert message["attempt"] == 2
    await h.shard.report(job_id, {"ok": False, "error": "late", "attempt": 1})
    assert await h.state(job_id) == "QUEUED"
    await h.shard.report(job_id, {"ok": True, "result": 2, "attempt": 2})
    assert await h.state(job_id) == "COMPLETED"


async def test_heartbeat_progress_and_effects(h: Harness) -> None:
    # J-66, J-67, J-69
    job_id = await h.enqueue()
    assert await h.shard.heartbeat(job_id, 0.5) == {"ok": False, "cancelRequested": False}
    await h.tick()
    h.clock.advance(100)
    assert await h.shard.heartbeat(job_id, 7) == {"ok": True, "cancelRequested": False}
    await h.tick()
    assert h.snap(job_id)["progress"] == 1.0
    await h.shard.heartbeat(job_id, "n/a")  # no progress keeps the stored value
    await h.tick()
    assert h.snap(job_id)["progress"] == 1.0
    await h.shard.report(job_id, {"ok": True})
    await h.tick()
    assert h.snap(job_id)["progress"] is None  # J-69: cleared by the transition
    assert (await h.shard.heartbeat(job_id))["ok"] is False


async def test_heartbeat_postpones_the_reaper(h: Harness) -> None:
    # J-68, J-111: origin = max(dispatched_at, heartbeat_at)
    job_id = await h.enqueue(timeoutMs=1000)
    await h.tick()
    h.clock.advance(20_000)
    await h.shard.heartbeat(job_id)
    await h.tick_at(START + 31_000)  # the original deadline
    assert await h.state(job_id) == "QUEUED"
    await h.tick_at(START + 20_000 + 31_000)
    assert await h.state(job_id) == "SCHEDULED"


async def test_stale_heartbeat_refused(h: Harness) -> None:
    # ADR-0046
    job_id = await h.enqueue()
    await h.tick()
    assert (await h.shard.heartbeat(job_id, None, 2))["ok"] is False
    assert (await h.shard.heartbeat(job_id, None, 1))["ok"] is True
