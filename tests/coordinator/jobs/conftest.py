"""A job shard on in-memory sqlite with fakes and a FixedClock that only the test moves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.testing.fakes import FakeAlarm, FakeQueue, FakeReadModel, InProcessShards, current_snapshot

START = 1_700_000_000_000


@dataclass
class RecordingRuns:
    """A RunNamespace that records notify() calls per run id."""

    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fail: bool = False

    def get(self, run_id: str) -> RecordingRuns.Stub:
        return RecordingRuns.Stub(self, run_id)

    @dataclass
    class Stub:
        owner: RecordingRuns
        run_id: str

        async def notify(self, events: Any) -> None:
            if self.owner.fail:
                raise RuntimeError("run unavailable")
            self.owner.events.setdefault(self.run_id, []).extend(events)


class Harness:
    def __init__(self) -> None:
        self.clock = FixedClock(START)
        self.runs = RecordingRuns()
        self.shards = InProcessShards(self.clock, runs=self.runs, rand=lambda: 0.5)
        self.shard: JobShard = self.shards.get("MAIL#0")

    @property
    def queue(self) -> FakeQueue:
        return self.shards.queue

    @property
    def read_model(self) -> FakeReadModel:
        assert isinstance(self.shards.read_model, FakeReadModel)
        return self.shards.read_model

    @property
    def alarm(self) -> FakeAlarm:
        return self.shards.alarms["MAIL#0"]

    async def enqueue(self, settings: dict[str, Any] | None = None, **item: Any) -> str:
        item.setdefault("binding", "MAIL")
        item.setdefault("payload", None)
        return (await self.shard.enqueue_many([item], settings))[0]

    async def tick(self) -> list[dict[str, Any]]:
        """Fire due alarms (at the current time) and return the messages sent."""
        await self.shards.run_due_alarms()
        return self.queue.take()

    async def tick_at(self, at_ms: int) -> list[dict[str, Any]]:
        self.clock.set(max(self.clock.now(), at_ms))
        return await self.tick()

    def snap(self, job_id: str) -> dict[str, Any]:
        """The job's snapshot as the shard holds it now: what its next projection writes (J-190)."""
        return current_snapshot(self.shard, job_id)

    async def state(self, job_id: str) -> str | None:
        return await self.shard.state_of(job_id)


@pytest.fixture
def h() -> Harness:
    return Harness()
