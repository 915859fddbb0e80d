"""A recording fake shard and queue messages for the consumer tests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

REPORT_KEYS = {"ok", "result", "spawns", "error", "retry", "attempt"}


class FakeShard:
    """Records every RPC the consumer makes, in one event list shared with the messages."""

    def __init__(self, events: list[tuple[Any, ...]]) -> None:
        self.events = events
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self.heartbeats: list[tuple[str, Any, int | None]] = []
        self.claim_result: bool | Exception = True
        self.heartbeat_answer: Any = {"ok": True, "cancelRequested": False}
        self.heartbeat_gate: asyncio.Event | None = None
        self.report_error: Exception | None = None
        self.expired: list[str] = []

    async def report(self, job_id: str, outcome: dict[str, Any]) -> None:
        assert set(outcome) <= REPORT_KEYS, outcome  # the wire: J-119 keys only
        assert isinstance(outcome["ok"], bool)
        self.events.append(("report", job_id))
        if self.report_error is not None:
            raise self.report_error
        self.reports.append((job_id, outcome))

    async def heartbeat(self, job_id: str, progress: Any = None, attempt: int | None = None) -> Any:
        self.heartbeats.append((job_id, progress, attempt))
        if self.heartbeat_gate is not None:
            await self.heartbeat_gate.wait()
        if isinstance(self.heartbeat_answer, Exception):
            raise self.heartbeat_answer
        return self.heartbeat_answer

    async def claim(self, job_id: str) -> bool:
        self.events.append(("claim", job_id))
        if isinstance(self.claim_result, Exception):
            raise self.claim_result
        return self.claim_result

    async def expire(self, job_id: str) -> bool:
        self.events.append(("expire", job_id))
        self.expired.append(job_id)
        return True


class FakeNamespace:
    def __init__(self, events: list[tuple[Any, ...]]) -> None:
        self.events = events
        self.shards: dict[str, FakeShard] = {}

    def get(self, name: str) -> FakeShard:
        return self.shards.setdefault(name, FakeShard(self.events))


class FakeMessage:
    def __init__(self, body: Any, events: list[tuple[Any, ...]]) -> None:
        self.body = body
        self.attempts = 1
        self.events = events
        self.acks = 0

    def ack(self) -> None:
        self.acks += 1
        self.events.append(("ack", self.body.get("jobId") if isinstance(self.body, dict) else None))

    def retry(self) -> None:
        raise AssertionError("the consumer never asks the Queue to retry (J-118)")


class Harness:
    """One env with a fake JOB_SHARD, plus helpers to build dispatch messages (J-116)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.namespace = FakeNamespace(self.events)
        self.env: dict[str, Any] = {"JOB_SHARD": self.namespace}

    def shard(self, name: str = "MAIL#0") -> FakeShard:
        return self.namespace.get(name)

    def message(self, local_id: str = "job1", **fields: Any) -> FakeMessage:
        body = {
            "jobId": f"MAIL#0:{local_id}",
            "binding": "MAIL",
            "attempt": 1,
            "payload": {"to": "a@example.com"},
            "timeoutMs": 60_000,
            "claimRequired": False,
        }
        body.update(fields)
        return FakeMessage(body, self.events)

    def messages(self, *messages: FakeMessage) -> Sequence[FakeMessage]:
        return list(messages)


@pytest.fixture
def harness() -> Harness:
    return Harness()
