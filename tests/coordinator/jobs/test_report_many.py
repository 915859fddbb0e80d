"""``report_many`` (ADR-0106) and the statement changes of ADR-0105, on the shard engine."""

from __future__ import annotations

from typing import Any

import pytest
from tests.coordinator.jobs.conftest import START, Harness

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.event_outbox import EventOutbox
from tsumugi.testing.counting_executor import CountingExecutor
from tsumugi.testing.fakes import FakeAlarm, FakeQueue, current_snapshot


def ok(attempt: int = 1) -> dict[str, Any]:
    return {"ok": True, "result": None, "attempt": attempt}


def failed(attempt: int = 1) -> dict[str, Any]:
    return {"ok": False, "error": "boom", "attempt": attempt}


async def test_report_many_applies_each_report_like_report(h: Harness) -> None:
    # ADR-0106 (J-115): a success completes, a failure with attempts left is rescheduled
    done = await h.enqueue(maxAttempts=3)
    retried = await h.enqueue(maxAttempts=3, backoff={"kind": "fixed", "delayMs": 1000})
    assert len(await h.tick()) == 2
    await h.shard.report_many([(done, ok()), (retried, failed())])
    assert await h.state(done) == "COMPLETED"
    assert await h.state(retried) == "SCHEDULED"
    assert h.alarm.at == h.clock.now()  # J-165: armed once, at once
    await h.tick()
    assert h.snap(done)["state"] == "COMPLETED"
    assert h.snap(retried)["attempts"] == 1


async def test_a_second_report_of_the_same_attempt_in_one_group_is_stale(h: Harness) -> None:
    # J-115: the second report of attempt 1 finds the job no longer in flight and is ignored
    job_id = await h.enqueue(maxAttempts=3)
    await h.tick()
    await h.shard.report_many([(job_id, ok()), (job_id, failed())])
    assert await h.state(job_id) == "COMPLETED"


async def test_report_many_of_unknown_jobs_changes_nothing(h: Harness) -> None:
    # J-115: a report for a job the shard does not have is ignored
    await h.shard.report_many([("MAIL#0:nosuchjob", ok())])
    assert h.alarm.at is None


async def test_a_dispatch_tick_sends_in_priority_order(h: Harness) -> None:
    # J-142: the messages leave in dispatch order, every dispatched job QUEUED before the send (J-161)
    low = [await h.enqueue(priority=0) for _ in range(60)]
    high = [await h.enqueue(priority=5) for _ in range(60)]
    sent = [m["jobId"] for m in (await h.tick())]
    assert len(sent) == 100  # the default concurrency
    assert set(sent[:60]) == set(high)
    assert set(sent[60:]) < set(low)
    assert sent[:60] == sorted(high) and sent[60:] == sorted(sent[60:])  # same created_at: by id
    assert [await h.state(job_id) for job_id in sent] == ["QUEUED"] * 100


async def _dispatch_tick_vm_steps(ready: int) -> int:
    """SQLite VM steps of a tick that dispatches 100 of ``ready`` jobs, with an empty outbox."""
    executor = CountingExecutor(SqliteExecutor())
    clock = FixedClock(START)
    shard = JobShard("NOOP#0", executor, clock=clock, alarm=FakeAlarm(), queue=FakeQueue())
    for offset in range(0, ready, 1000):
        items = [{"binding": "NOOP", "payload": n} for n in range(offset, min(ready, offset + 1000))]
        await shard.enqueue_many(items, {"policy": {"concurrency": 100}})
    executor.execute("DELETE FROM outbox")
    clock.set(START + 1)
    before = executor.vm_steps
    await shard.alarm()
    return executor.vm_steps - before


async def test_a_dispatch_tick_costs_the_same_at_any_backlog() -> None:
    # Spec README decision 5, ADR-0043, ADR-0105: a tick's SQL work does not depend on the backlog
    small = await _dispatch_tick_vm_steps(1_000)
    large = await _dispatch_tick_vm_steps(20_000)
    assert large <= small * 1.05


async def test_the_same_given_id_twice_in_one_batch_is_one_job(h: Harness) -> None:
    # J-38 (ADR-0105: rows are inserted together at the end of the batch)
    items = [{"binding": "MAIL", "payload": n, "id": "MAIL#0:node1"} for n in (1, 2)]
    assert await h.shard.enqueue_many(items) == ["MAIL#0:node1", "MAIL#0:node1"]
    await h.tick()
    assert h.snap("MAIL#0:node1")["payload"] == "1"


def _job_reads(executor: CountingExecutor) -> int:
    """Rows read so far by statements that read job rows by id (a report's read of its jobs)."""
    return sum(
        stats.rows_returned
        for sql, stats in executor.stats.items()
        if sql.startswith("SELECT") and "FROM job WHERE id IN" in sql
    )


async def test_first_attempts_the_shard_dispatched_complete_without_reading_their_rows() -> None:
    # ADR-0181 (J-115, F-45): what a first attempt's success needs of its job was remembered at dispatch
    executor = CountingExecutor(SqliteExecutor())
    clock = FixedClock(START)
    queue = FakeQueue()
    shard = JobShard("NOOP#0", executor, clock=clock, alarm=FakeAlarm(), queue=queue)
    await shard.report_many([])  # the local runtime's batching: the shard remembers what it dispatches
    plain = await shard.enqueue_many([{"binding": "NOOP", "payload": n} for n in range(3)])
    [node] = await shard.enqueue_many(
        [{"binding": "NOOP", "payload": 9, "runId": "FLOW:r1", "nodeId": "step", "maxAttempts": 4}]
    )
    clock.set(START + 10)
    await shard.alarm()
    assert len(queue.take()) == 4
    clock.set(START + 25)
    reads = _job_reads(executor)
    await shard.report_many([(job_id, ok()) for job_id in [*plain, node]])
    assert _job_reads(executor) == reads
    assert [await shard.state_of(job_id) for job_id in [*plain, node]] == ["COMPLETED"] * 4
    snapshot = current_snapshot(shard, node)
    assert (snapshot["attempts"], snapshot["max_attempts"], snapshot["result"]) == (1, 4, None)
    [(_, run_id, event)] = EventOutbox(executor).run_events(10)  # what the run will be told (F-45)
    assert run_id == "FLOW:r1"
    assert event == {"nodeId": "step", "jobId": node, "state": "COMPLETED", "result": None, "error": None}


async def test_a_remembered_job_no_longer_on_its_first_attempt_refuses_the_batch(h: Harness) -> None:
    # ADR-0181, ADR-0106: a batch with a stale first-attempt report applies nothing; one by one, the
    # stale report is ignored (J-115) and the others apply
    await h.shard.report_many([])
    silent = await h.enqueue(maxAttempts=3, timeoutMs=1_000)
    done = await h.enqueue(maxAttempts=3, timeoutMs=3_600_000)
    assert len(await h.tick()) == 2
    await h.tick_at(START + 900_000)  # attempt 1 of ``silent`` went silent: reaped, it waits for attempt 2
    assert h.snap(silent)["state"] == "SCHEDULED" and h.snap(silent)["attempts"] == 1
    late = [(silent, ok()), (done, ok())]  # attempt 1's success arrives after all
    with pytest.raises(RuntimeError):
        await h.shard.report_many(late)
    assert await h.state(done) == "QUEUED"  # nothing of the batch was applied
    for job_id, outcome in late:
        await h.shard.report(job_id, outcome)
    assert (await h.state(silent), await h.state(done)) == ("SCHEDULED", "COMPLETED")
