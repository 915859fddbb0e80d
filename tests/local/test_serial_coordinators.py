"""Coordinators run one call at a time, like a Durable Object behind its input gate (ADR-0050)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators
from tsumugi.runtimes.local.shard_namespace import LocalShardNamespace
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


def _namespace(
    tmp_path: Path, clock: FixedClock, coordinator_class: Any, closing: Any
) -> LocalShardNamespace:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = closing(
        SerialCoordinators("shards", tmp_path / "shards", alarms, clock, coordinator_class, SqliteExecutor)
    )
    return LocalShardNamespace(coordinators)


async def test_calls_into_one_shard_never_interleave(
    tmp_path: Path, clock: FixedClock, recording_coordinator: Any, closing: Any
) -> None:
    namespace = _namespace(tmp_path, clock, recording_coordinator, closing)
    shard = namespace.get("MAIL#0")
    await asyncio.gather(shard.slow_call("a"), shard.slow_call("b"), shard.slow_call("c"))
    events = namespace.coordinators.coordinator("MAIL#0").events
    assert events == ["enter a", "leave a", "enter b", "leave b", "enter c", "leave c"]


async def test_different_shards_run_concurrently(
    tmp_path: Path, clock: FixedClock, recording_coordinator: Any, closing: Any
) -> None:
    namespace = _namespace(tmp_path, clock, recording_coordinator, closing)
    log: list[str] = []
    first, second = namespace.get("MAIL#0"), namespace.get("MAIL#1")
    await asyncio.gather(first.slow_call("a"), second.slow_call("b"))
    for name in ("MAIL#0", "MAIL#1"):
        log.extend(namespace.coordinators.coordinator(name).events)
    assert sorted(log) == ["enter a", "enter b", "leave a", "leave b"]


async def test_each_shard_has_its_own_sqlite_file(
    tmp_path: Path, clock: FixedClock, recording_coordinator: Any, closing: Any
) -> None:
    # J-17: a shard is named <binding>#<n>; locally each one is a file under shards/
    namespace = _namespace(tmp_path, clock, recording_coordinator, closing)
    for name in ("MAIL#0", "MAIL#1", "Report#0"):
        await namespace.get(name).slow_call(name)
    assert namespace.coordinators.names_on_disk() == ["MAIL#0", "MAIL#1", "Report#0"]
    assert namespace.get("MAIL#0") is namespace.get("MAIL#0")


async def test_a_coordinator_calling_itself_reenters_instead_of_deadlocking(
    tmp_path: Path, clock: FixedClock, recording_coordinator: Any, closing: Any
) -> None:
    namespace = _namespace(tmp_path, clock, recording_coordinator, closing)
    shard = namespace.get("MAIL#0")
    coordinator = namespace.coordinators.coordinator("MAIL#0")

    async def nested(tag: str) -> str:
        return str(await shard.slow_call(tag))

    coordinator.nested = nested
    assert await asyncio.wait_for(shard.nested("inner"), timeout=5) == "inner"
