"""A scheduler over real SQLite with fake shards and runs (tests only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.coordinator.scheduler import Scheduler
from tsumugi.core.schedules import normalize_schedules
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

START = 1_767_225_600_000  # 2026-01-01T00:00Z


class FakeAlarm:
    def __init__(self) -> None:
        self.at: int | None = None

    async def get_alarm(self) -> int | None:
        return self.at

    async def set_alarm(self, at_ms: int) -> None:
        self.at = at_ms

    async def delete_alarm(self) -> None:
        self.at = None


class FakeShard:
    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.states: dict[str, str] = {}
        self.fail = False

    async def enqueue_many(self, inputs: Sequence[dict[str, Any]], settings: Any = None) -> list[str]:
        if self.fail:
            raise RuntimeError("shard down")
        for job in inputs:
            self.jobs.setdefault(job["id"], dict(job))
            self.states.setdefault(job["id"], "SCHEDULED")
        return [j["id"] for j in inputs]

    async def state_of(self, job_id: str) -> str | None:
        return self.states.get(job_id)


class FakeShards:
    def __init__(self) -> None:
        self.by_name: dict[str, FakeShard] = {}

    def get(self, name: str) -> FakeShard:
        return self.by_name.setdefault(name, FakeShard())


class FakeRun:
    def __init__(self) -> None:
        self.started: list[tuple[str, Any, int | None]] = []
        self.current: str | None = None

    async def start(
        self, flow: str, input: Any, deadline_ms: int | None = None, parent: Any = None, depth: int = 0
    ) -> dict[str, Any]:
        created = self.current is None
        if created:
            self.started.append((flow, input, deadline_ms))
            self.current = "RUNNING"
        return {"created": created}

    async def state(self) -> str | None:
        return self.current


class FakeRuns:
    def __init__(self) -> None:
        self.by_id: dict[str, FakeRun] = {}

    def get(self, run_id: str) -> FakeRun:
        return self.by_id.setdefault(run_id, FakeRun())


class Harness:
    def __init__(self) -> None:
        self.clock = FixedClock(START)
        self.sql = SqliteExecutor()
        self.alarm = FakeAlarm()
        self.shards = FakeShards()
        self.runs: FakeRuns | None = FakeRuns()

    def scheduler(
        self, schedules: dict[str, dict[str, Any]], shards_of: dict[str, int] | None = None
    ) -> Scheduler:
        shards_of = shards_of or {"Poll": 1}
        defs = normalize_schedules(schedules, shards_of=shards_of, requires_of={}, flow_names={"REPORT"})
        return Scheduler(
            self.sql,
            clock=self.clock,
            alarm=self.alarm,
            schedules=defs,
            shards=self.shards,
            runs=self.runs,
            shards_of=shards_of,
        )

    async def fire_due(self, scheduler: Scheduler) -> None:
        assert self.alarm.at is not None and self.alarm.at <= self.clock.now()
        self.alarm.at = None
        await scheduler.alarm()


@pytest.fixture
def harness() -> Harness:
    return Harness()
