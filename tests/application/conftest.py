"""A recording fake JOB_SHARD that checks the enqueue wire it receives."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from tsumugi.core.wire_format import format_job_id, parse_job_id

WIRE_INPUT_KEYS = {
    "binding",
    "payload",
    "priority",
    "maxAttempts",
    "backoff",
    "timeoutMs",
    "delayMs",
    "runAt",
    "guarantee",
    "concurrencyKey",
    "uniqueKey",
    "uniqueForMs",
    "traceparent",
    "expiresAt",
    "expiresInMs",
}
SETTINGS_KEYS = {"policy", "sweepAfterMs", "failedRetentionMs", "onFailure", "onSettled"}


class RecordingShard:
    def __init__(self, name: str, log: list[tuple[str, Any, Any]]) -> None:
        self.name = name
        self.log = log
        self.configured: list[dict[str, Any]] = []
        self._next = 0

    async def enqueue_many(
        self, inputs: Sequence[dict[str, Any]], settings: dict[str, Any] | None = None
    ) -> list[str]:
        for item in inputs:
            assert set(item) <= WIRE_INPUT_KEYS, sorted(set(item) - WIRE_INPUT_KEYS)  # camelCase wire only
            assert item["binding"] == self.name.split("#")[0]
            json.dumps(item)  # crosses an RPC boundary as JSON-shaped data
        if settings is not None:
            assert set(settings) <= SETTINGS_KEYS, settings
            json.dumps(settings)
        self.log.append((self.name, list(inputs), settings))
        binding, _, shard = self.name.partition("#")
        ids = []
        for _ in inputs:
            self._next += 1
            ids.append(format_job_id(binding, int(shard), f"j{self._next:05d}"))
        return ids

    async def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        assert set(settings) <= SETTINGS_KEYS
        self.configured.append(settings)
        return {"ok": True}

    async def state_of(self, job_id: str) -> str | None:
        assert parse_job_id(job_id)
        return "SCHEDULED"


class RecordingNamespace:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []
        self.shards: dict[str, RecordingShard] = {}

    def get(self, name: str) -> RecordingShard:
        return self.shards.setdefault(name, RecordingShard(name, self.calls))


class Service:
    async def perform(self, payload: Any, ctx: Any) -> None:
        return None


@pytest.fixture
def namespace() -> RecordingNamespace:
    return RecordingNamespace()


@pytest.fixture
def env(namespace: RecordingNamespace) -> dict[str, Any]:
    """A complete environment (J-205): the three required bindings."""
    return {"JOB_SHARD": namespace, "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": object()}
