"""An in-memory world for run coordinators: fake shards, fake alarms, real SQLite (tests only)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.coordinator.run import RunCoordinator
from tsumugi.core.config import RunSettings
from tsumugi.core.flow.model import Flow
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

START = 1_700_000_000_000


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
    """Records enqueues (idempotent by id, J-38) and answers cancel like a job shard (J-130, J-135)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.jobs: dict[str, dict[str, Any]] = {}
        self.enqueue_calls = 0
        self.running: set[str] = set()
        self.cancelled: list[str] = []
        self.fail_enqueue = False

    async def enqueue_many(self, inputs: Sequence[dict[str, Any]], settings: Any = None) -> list[str]:
        if self.fail_enqueue:
            raise RuntimeError("shard unavailable")
        self.enqueue_calls += 1
        for job in inputs:
            stored = dict(job)
            if "payloadJson" in stored:  # a node's payload as the run stored it: the shard keeps that text
                stored["payload"] = json.loads(stored.pop("payloadJson"))
            self.jobs.setdefault(job["id"], stored)
        return [job["id"] for job in inputs]

    async def cancel(self, job_id: str) -> dict[str, Any]:
        self.cancelled.append(job_id)
        if job_id in self.running:
            return {"ok": True, "requested": True}
        return {"ok": True}


class FakeShards:
    def __init__(self) -> None:
        self.shards: dict[str, FakeShard] = {}

    def get(self, name: str) -> FakeShard:
        return self.shards.setdefault(name, FakeShard(name))

    def all_jobs(self) -> dict[str, dict[str, Any]]:
        return {jid: job for shard in self.shards.values() for jid, job in shard.jobs.items()}


class FakeReadModel:
    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []

    async def upsert_runs(self, snapshots: Sequence[Mapping[str, Any]]) -> None:
        self.runs.extend(dict(s) for s in snapshots)

    async def upsert_run_nodes(self, snapshots: Sequence[Mapping[str, Any]]) -> None:
        self.nodes.extend(dict(s) for s in snapshots)


class World:
    """Every run coordinator of one test, addressed by run id like ``env.RUN``."""

    def __init__(
        self,
        flows: Mapping[str, Flow],
        settings: RunSettings | None = None,
        shards_of: Mapping[str, int] | None = None,
    ) -> None:
        self.clock = FixedClock(START)
        self.flows = flows
        self.settings = settings or RunSettings()
        self.shards_of = shards_of or {}
        self.shards = FakeShards()
        self.read_model = FakeReadModel()
        self.coordinators: dict[str, RunCoordinator] = {}
        self.alarms: dict[str, FakeAlarm] = {}
        self.counter = 0

    def _new_id(self) -> str:
        self.counter += 1
        return f"j{self.counter:023d}"

    def get(self, run_id: str, storage: SqliteExecutor | None = None) -> RunCoordinator:
        """The run's coordinator, made on first use over ``storage`` (a fresh in-memory SQLite)."""
        if run_id not in self.coordinators:
            self.alarms[run_id] = FakeAlarm()
            self.coordinators[run_id] = RunCoordinator(
                run_id,
                storage or SqliteExecutor(),
                clock=self.clock,
                alarm=self.alarms[run_id],
                shards=self.shards,
                runs=self,
                read_model=self.read_model,
                flows=self.flows,
                settings=self.settings,
                shards_of=self.shards_of,
                new_id=self._new_id,
            )
        return self.coordinators[run_id]

    async def settle(self, rounds: int = 100) -> None:
        """Fire every due alarm until none is due (the runtime's job)."""
        for _ in range(rounds):
            due = [rid for rid, a in self.alarms.items() if a.at is not None and a.at <= self.clock.now()]
            if not due:
                return
            for rid in due:
                self.alarms[rid].at = None
                await self.coordinators[rid].alarm()
        raise AssertionError("alarms never settled")

    def nodes(self, run_id: str) -> dict[str, Any]:
        return {n.id: n for n in self.get(run_id).ctx.store.nodes()}

    def states(self, run_id: str) -> dict[str, str]:
        return {n.id: n.state for n in self.get(run_id).ctx.store.nodes()}

    def job_of(self, run_id: str, node_id: str) -> dict[str, Any]:
        job_id = self.nodes(run_id)[node_id].job_id
        return self.shards.all_jobs()[job_id]

    async def finish(
        self,
        run_id: str,
        node_id: str,
        state: str = "COMPLETED",
        result: Any = None,
        error: str | None = None,
        spawns: list[dict[str, Any]] | None = None,
    ) -> None:
        """Deliver the terminal event the job shard would send for the node's current job (F-45)."""
        from tsumugi.core import wire_format

        node = self.nodes(run_id)[node_id]
        event: dict[str, Any] = {
            "nodeId": node_id,
            "jobId": node.job_id,
            "state": state,
            "result": None if result is None else wire_format.dumps(result),
            "error": error,
        }
        if spawns is not None:
            event["spawns"] = spawns
        await self.get(run_id).notify([event])


@pytest.fixture
def make_world() -> Any:
    return World
