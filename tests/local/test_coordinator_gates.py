"""A coordinator waiting on another, or on another service, frees its own lock, as a DO's input gate
opens during a call (ADR-0102, ADR-0170)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators, outside_turn
from tsumugi.runtimes.local.shard_namespace import LocalNamespace
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


class Peer:
    """Calls other peers through the namespace, the way a shard notifies a run and a run enqueues."""

    namespace: LocalNamespace
    barrier: asyncio.Barrier

    def __init__(self, name: str, sql: SqlExecutor, alarm: AlarmPort) -> None:
        self.name = name
        self.events: list[str] = []
        self.spawned: asyncio.Future[str] | None = None

    async def call_other(self, other: str) -> str:
        self.events.append("holding")
        await self.barrier.wait()  # both peers hold their own lock before calling the other one
        answer: str = await self.namespace.get(other).answer()
        self.events.append(f"got {answer}")
        return answer

    async def answer(self) -> str:
        self.events.append("answer")
        return self.name

    async def await_service(self, reply: asyncio.Future[str]) -> str:
        """Awaits another service (the read model) from inside its turn."""
        answer = await outside_turn(reply)
        self.events.append(f"service {answer}")
        return answer

    async def spawn_and_wait(self) -> bool:
        """Starts a task calling this peer; it must wait for the turn, not inherit it."""
        self.spawned = asyncio.ensure_future(self.namespace.get(self.name).answer())
        for _ in range(10):
            await asyncio.sleep(0)
        self.events.append("spawned")
        return not self.spawned.done()  # the spawned call runs once this turn ends


def _namespace(tmp_path: Path, closing: Any) -> LocalNamespace:
    clock = FixedClock(0)
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = closing(
        SerialCoordinators("peers", tmp_path / "peers", alarms, clock, Peer, SqliteExecutor)
    )
    namespace = LocalNamespace(coordinators)
    Peer.namespace = namespace
    Peer.barrier = asyncio.Barrier(2)
    return namespace


async def test_two_coordinators_calling_each_other_do_not_deadlock(tmp_path: Path, closing: Any) -> None:
    namespace = _namespace(tmp_path, closing)
    both = asyncio.gather(namespace.get("a").call_other("b"), namespace.get("b").call_other("a"))
    assert await asyncio.wait_for(both, timeout=5) == ["b", "a"]
    # each answered the other while its own call was waiting on that other one
    assert namespace.coordinators.coordinator("a").events == ["holding", "answer", "got b"]


async def test_a_task_started_in_a_turn_waits_for_that_turn(tmp_path: Path, closing: Any) -> None:
    namespace = _namespace(tmp_path, closing)
    assert await asyncio.wait_for(namespace.get("a").spawn_and_wait(), timeout=5) is True
    peer = namespace.coordinators.coordinator("a")
    assert isinstance(peer, Peer) and peer.spawned is not None
    assert await asyncio.wait_for(peer.spawned, timeout=5) == "a"
    assert peer.events == ["spawned", "answer"]


async def test_a_call_reaches_a_coordinator_while_it_awaits_another_service(
    tmp_path: Path, closing: Any
) -> None:
    namespace = _namespace(tmp_path, closing)
    reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(namespace.get("a").await_service(reply))
    assert await asyncio.wait_for(namespace.get("a").answer(), timeout=5) == "a"  # let in meanwhile
    reply.set_result("written")
    assert await asyncio.wait_for(waiting, timeout=5) == "written"
    assert namespace.coordinators.coordinator("a").events == ["answer", "service written"]
