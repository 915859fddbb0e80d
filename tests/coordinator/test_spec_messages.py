"""Spec audit of engine texts: logs and persisted errors of the job shard (jobs.md §11, J-41, J-72, M-4)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.testing.fakes import FakeAlarm, FakeQueue

START = 1_700_000_000_000
NODE_JOB = {
    "binding": "MAIL",
    "payload": 1,
    "id": "MAIL#0:node1",
    "runId": "F:r1",
    "nodeId": "a",
    "maxAttempts": 1,
}


class BrokenMetrics:
    async def write(self, snapshots: Sequence[Any]) -> int:
        raise RuntimeError("analytics engine down")


class RecordingRuns:
    """A RUN namespace that keeps every notified event."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def get(self, run_id: str) -> RecordingRuns:
        return self

    async def notify(self, events: Sequence[dict[str, Any]]) -> None:
        self.events.extend(events)


def make_shard(*, metrics: Any = None, runs: Any = None) -> tuple[JobShard, FixedClock, FakeQueue]:
    clock, queue = FixedClock(START), FakeQueue()
    shard = JobShard(
        "MAIL#0", SqliteExecutor(), clock=clock, alarm=FakeAlarm(), queue=queue, metrics=metrics, runs=runs
    )
    return shard, clock, queue


async def test_a_failing_metrics_write_is_logged_and_the_tick_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # §11 "tsumugi: writeMetrics failed"; J-194, M-4: logged and swallowed, never fails the tick
    shard, _, queue = make_shard(metrics=BrokenMetrics())
    [job_id] = await shard.enqueue_many([{"binding": "MAIL", "payload": 1}])
    await shard.alarm()
    [message] = queue.take()
    await shard.report(message["jobId"], {"ok": True})
    with caplog.at_level(logging.ERROR, logger="tsumugi"):
        await shard.alarm()
    assert [r.getMessage() for r in caplog.records] == ["tsumugi: writeMetrics failed"]
    assert await shard.state_of(job_id) == "COMPLETED"
    assert (await shard.diagnostics())["outbox"] == 0  # the projection itself went through


async def test_a_node_job_without_the_run_binding_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    # §11 "tsumugi: cannot notify the run, RUN binding is not configured" (F-45 delivery without RUN)
    shard, _, queue = make_shard(runs=None)
    await shard.enqueue_many([NODE_JOB])
    await shard.alarm()
    [message] = queue.take()
    await shard.report(message["jobId"], {"ok": True})
    with caplog.at_level(logging.ERROR, logger="tsumugi"):
        await shard.alarm()
    assert "tsumugi: cannot notify the run, RUN binding is not configured" in [
        r.getMessage() for r in caplog.records
    ]


async def test_an_unstorable_node_result_fails_with_the_catalogue_text() -> None:
    # J-72, F-46, §11: the run event carries the exact text (max_attempts 1, so no retry)
    runs = RecordingRuns()
    shard, _, queue = make_shard(runs=runs)
    await shard.enqueue_many([NODE_JOB])
    await shard.alarm()
    [message] = queue.take()
    await shard.report(message["jobId"], {"ok": True, "result": "x" * 9000})
    await shard.alarm()
    [event] = runs.events
    assert (event["state"], event["error"]) == (
        "FAILED",
        "cannot store the result (over 8192 chars or not serializable)",
    )


async def test_an_expired_node_job_reports_job_expired() -> None:
    # J-41 [INF]: the text recorded on a job cancelled by expiry is "job expired" (ADR-0047)
    runs = RecordingRuns()
    shard, clock, queue = make_shard(runs=runs)
    await shard.enqueue_many([{**NODE_JOB, "delayMs": 10_000, "expiresAt": START + 5_000}])
    clock.set(START + 10_000)
    await shard.alarm()
    assert queue.take() == []
    [event] = runs.events
    assert (event["state"], event["error"]) == ("CANCELLED", "job expired")
