"""Retention sweep (J-170, J-171, J-34), notices (J-180, J-180a, J-180b), run events (F-45)."""

from __future__ import annotations

from typing import Any

from .conftest import START, Harness


async def completed(h: Harness, settings: dict[str, Any]) -> str:
    """A job enqueued now with ``settings``, dispatched and COMPLETED, its report's tick done."""
    job_id = await h.enqueue(settings=settings)
    await h.tick()
    await h.shard.report(job_id, {"ok": True})
    await h.tick()
    return job_id


async def test_completed_jobs_swept_after_retention(h: Harness) -> None:
    # J-170: COMPLETED after sweep_after_ms, strictly older than the cutoff
    job_id = await h.enqueue(settings={"sweepAfterMs": 1000})
    await h.tick()
    await h.shard.report(job_id, {"ok": True})
    await h.tick()
    assert h.alarm.at == START + 1001
    await h.tick_at(START + 1001)
    assert await h.state(job_id) is None
    assert h.read_model.jobs[job_id]["state"] == "COMPLETED"  # the read model keeps it (J-195)


async def test_failed_jobs_kept_for_failed_retention_then_gone(h: Harness) -> None:
    # J-170, J-171: after failed retention, retry answers gone
    job_id = await h.enqueue(maxAttempts=1, settings={"failedRetentionMs": 5000})
    await h.tick()
    await h.shard.report(job_id, {"ok": False, "error": "x"})
    await h.tick()
    await h.tick_at(START + 5000)
    assert await h.state(job_id) == "FAILED"
    await h.tick_at(START + 5001)
    assert await h.shard.retry(job_id) == {"ok": False, "reason": "gone"}


async def test_a_busy_shard_sweeps_each_job_when_it_falls_due(h: Harness) -> None:
    # J-170: each tick's sweep asks to be woken at max(next due, now + 1000), and deletes what is due
    settings = {"sweepAfterMs": 1000}
    first = await completed(h, settings)
    h.clock.set(START + 500)
    second = await completed(h, settings)
    assert h.alarm.at == START + 1500
    await h.tick_at(START + 1500)
    assert await h.state(first) is None and await h.state(second) == "COMPLETED"
    assert h.alarm.at == START + 2500
    await h.tick_at(START + 2500)
    assert await h.state(second) is None


async def test_a_shorter_retention_applies_at_the_next_tick(h: Harness) -> None:
    # J-170, J-50: settings carried by an enqueue change the retention the very next sweep uses
    job_id = await completed(h, {"sweepAfterMs": 60_000})
    h.clock.set(START + 100)
    await h.enqueue(settings={"sweepAfterMs": 50})
    await h.tick()
    assert await h.state(job_id) is None


async def test_a_reservation_made_while_nothing_is_due_is_dropped_when_it_ends(h: Harness) -> None:
    # J-170: expired reservations are deleted in the sweep step, even when no finished job is due yet
    settings = {"sweepAfterMs": 60_000}
    job_id = await completed(h, settings)
    await h.enqueue(uniqueKey="u", uniqueForMs=10, settings=settings)
    await h.tick_at(START + 10)
    assert h.shard.ctx.sql.execute("SELECT count(*) FROM unique_key") == [(0,)]
    assert await h.state(job_id) == "COMPLETED"


async def test_unique_key_outlives_swept_job(h: Harness) -> None:
    # J-34: the reservation outlives the job's deletion
    settings = {"sweepAfterMs": 10}
    job_id = await h.enqueue(uniqueKey="u", uniqueForMs=100_000, settings=settings)
    await h.tick()
    await h.shard.report(job_id, {"ok": True})
    await h.tick()
    await h.tick_at(START + 1000)
    assert await h.state(job_id) is None
    assert await h.enqueue(uniqueKey="u", settings=settings) == job_id


async def test_failure_notice_enqueued_at_target_shard(h: Harness) -> None:
    # J-180, J-180b
    job_id = await h.enqueue(maxAttempts=1, settings={"onFailure": "ALERT"})
    await h.tick()
    await h.shard.report(job_id, {"ok": False, "error": "boom"})
    await h.tick()
    messages = await h.shards.get("ALERT#0").diagnostics()
    assert messages["active"] == 1
    [notice] = await h.tick()
    assert notice["binding"] == "ALERT"
    assert notice["payload"] == {
        "jobId": job_id,
        "binding": "MAIL",
        "state": "FAILED",
        "attempts": 1,
        "maxAttempts": 1,
        "error": "boom",
        "runId": None,
        "nodeId": None,
        "failedAt": START,
    }


async def test_notice_binding_own_failures_not_notified(h: Harness) -> None:
    # J-180: no loops
    alert = h.shards.get("ALERT#0")
    [job_id] = await alert.enqueue_many(
        [{"binding": "ALERT", "payload": 1, "maxAttempts": 1}], {"onFailure": "ALERT"}
    )
    await h.tick()
    await alert.report(job_id, {"ok": False})
    await h.tick()
    assert (await alert.diagnostics())["active"] == 0


async def test_settled_notice(h: Harness) -> None:
    # J-180a: COMPLETED notices carry the result, error null
    settings = {"onSettled": {"binding": "AUDIT", "states": ["COMPLETED"]}}
    job_id = await h.enqueue(settings=settings)
    await h.tick()
    await h.shard.report(job_id, {"ok": True, "result": {"n": 1}})
    await h.tick()
    [notice] = await h.tick()
    assert notice["payload"]["state"] == "COMPLETED"
    assert notice["payload"]["result"] == {"n": 1} and notice["payload"]["error"] is None
    assert notice["payload"]["settledAt"] == START


async def test_run_event_on_terminal_state(h: Harness) -> None:
    # F-45: {nodeId, jobId, state, result, error, spawns?} grouped per run, deleted after delivery
    job_id = await h.enqueue(runId="r1", nodeId="n1")
    await h.tick()
    spawns = [{"id": "c", "binding": "MAIL", "payload": 1}]
    await h.shard.report(job_id, {"ok": True, "result": 5, "spawns": spawns})
    h.runs.fail = True
    await h.tick()
    assert h.runs.events == {} and h.alarm.at == START + 5000
    h.runs.fail = False
    await h.tick_at(START + 5000)
    assert h.runs.events == {
        "r1": [
            {
                "nodeId": "n1",
                "jobId": job_id,
                "state": "COMPLETED",
                "result": "5",
                "error": None,
                "spawns": spawns,
            }
        ]
    }
