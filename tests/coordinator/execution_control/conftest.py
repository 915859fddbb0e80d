"""The public API (``define_tsumugi``) over in-process job shards, with a FixedClock only the test moves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.application.tsumugi import Tsumugi
from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.core.wire_format import shard_name_of
from tsumugi.performer import JobContext, Performer
from tsumugi.testing.fakes import InProcessShards, current_snapshot

START = 1_700_000_000_000
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Alert(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Audit(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS: Mapping[str, type[Performer]] = {"MAIL": Mail, "ALERT": Alert, "AUDIT": Audit}


class Stack:
    """``define_tsumugi(**definition)`` enqueuing into ``InProcessShards``; the test plays the consumer."""

    def __init__(self, **definition: Any) -> None:
        definition.setdefault("performers", PERFORMERS)
        self.clock = FixedClock(START)
        self.shards = InProcessShards(self.clock, rand=lambda: 0.5)
        self.env = {"JOB_SHARD": self.shards, "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": self.shards.queue}
        self.app: Tsumugi = define_tsumugi(**definition)
        self.app.clock = self.clock

    async def enqueue(self, **options: Any) -> str:
        options.setdefault("binding", "MAIL")
        options.setdefault("payload", None)
        return await self.app.enqueue(self.env, **options)

    def shard(self, name: str) -> JobShard:
        return self.shards.get(name)

    def shard_of(self, job_id: str) -> JobShard:
        return self.shards.get(shard_name_of(job_id))

    async def state(self, job_id: str) -> str | None:
        return await self.shard_of(job_id).state_of(job_id)

    async def tick(self) -> list[dict[str, Any]]:
        """Run every due alarm until none is due now; return the dispatch messages sent."""
        await self.shards.settle()
        return self.shards.queue.take()

    async def tick_at(self, at_ms: int) -> list[dict[str, Any]]:
        self.clock.set(max(self.clock.now(), at_ms))
        return await self.tick()

    async def report(self, message: Mapping[str, Any], outcome: Mapping[str, Any]) -> None:
        await self.shard_of(str(message["jobId"])).report(str(message["jobId"]), outcome)

    def snapshot(self, job_id: str) -> dict[str, Any]:
        """The job's snapshot as its shard holds it now: what its next projection writes (J-190)."""
        return current_snapshot(self.shard_of(job_id), job_id)


@pytest.fixture
def stack() -> Stack:
    return Stack()
