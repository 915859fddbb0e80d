"""Fakes for the local runtime's tests (a recording coordinator, wiring, app) and a `tsumugi dev` child."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.dev_child import DevProcess, free_port, wait_for

from tsumugi.clock import FixedClock
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


class RecordingCoordinator:
    """Records RPCs and ticks; ``slow_call`` yields to the loop between entering and leaving."""

    def __init__(self, name: str, sql: SqlExecutor, alarm: AlarmPort, runtime: Any = None) -> None:
        self.name = name
        self.sql = sql
        self.alarm_port = alarm
        self.runtime = runtime
        self.events: list[str] = []
        self.ticks = 0
        self.fail_ticks = 0
        sql.execute("CREATE TABLE IF NOT EXISTS item (body TEXT)")

    async def slow_call(self, tag: str, yields: int = 5) -> str:
        self.events.append(f"enter {tag}")
        for _ in range(yields):
            await asyncio.sleep(0)
        self.events.append(f"leave {tag}")
        return tag

    async def enqueue_many(self, inputs: Sequence[dict[str, Any]], settings: Any = None) -> list[str]:
        """Stores the inputs and sends each as a dispatch message at the next tick (like a real shard)."""
        self.sql.execute_many("INSERT INTO item (body) VALUES (?)", [(str(i["payload"]),) for i in inputs])
        await self.alarm_port.set_alarm(self.runtime.clock.now())
        return [f"{self.name}:{i['payload']}" for i in inputs]

    async def alarm(self) -> None:
        self.ticks += 1
        self.events.append("tick")
        if self.fail_ticks:
            self.fail_ticks -= 1
            raise RuntimeError("tick failed on purpose")
        rows = self.sql.execute("SELECT rowid, body FROM item")
        if rows and self.runtime is not None:
            self.sql.execute("DELETE FROM item")
            await self.runtime.queue.send_batch([{"jobId": f"{self.name}:{body}"} for _, body in rows])


class RecordingWiring:
    """A ``RuntimeWiring`` that hosts ``RecordingCoordinator`` shards and an in-memory read model."""

    def __init__(self) -> None:
        self.coordinators: dict[str, RecordingCoordinator] = {}

    def executor(self, path: Path) -> SqlExecutor:
        return SqliteExecutor(path)

    def read_model(self, path: Path) -> Any:
        return {"path": path}

    def job_shard(self, name: str, sql: SqlExecutor, alarm: AlarmPort, runtime: LocalRuntime) -> Any:
        coordinator = self.coordinators[name] = RecordingCoordinator(name, sql, alarm, runtime)
        return coordinator

    async def prepare_read_model(self, read_model: Any) -> None:
        return None

    def close(self) -> None:
        return None

    def namespaces(self, runtime: LocalRuntime) -> dict[str, tuple[str, Any]]:
        """A second coordinator kind, reached as ``env.RUN`` (how flows plug in)."""
        return {"RUN": ("runs", lambda name, sql, alarm: RecordingCoordinator(name, sql, alarm, runtime))}


class RecordingApp:
    """An app whose queue handler records message bodies and signals when ``expected`` have arrived."""

    def __init__(self, expected: int = 1) -> None:
        self.bodies: list[Any] = []
        self.expected = expected
        self.done = asyncio.Event()
        self.ack = True

    async def queue(self, batch: Sequence[Any], env: Any, ctx: Any = None) -> None:
        for message in batch:
            self.bodies.append(message.body)
            if self.ack:
                message.ack()
        if len(self.bodies) >= self.expected:
            self.done.set()

    async def enqueue(self, env: Any, **kwargs: Any) -> str:
        return "unused"


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(1_700_000_000_000)


@pytest.fixture
def wiring() -> RecordingWiring:
    return RecordingWiring()


@pytest.fixture
def make_runtime(tmp_path: Path, clock: FixedClock, wiring: RecordingWiring) -> Callable[..., LocalRuntime]:
    def make(app: Any, **options: Any) -> LocalRuntime:
        return LocalRuntime(app, tmp_path / "state", clock=clock, wiring=wiring, **options)

    return make


@pytest.fixture
def recording_app() -> type[RecordingApp]:
    return RecordingApp


@pytest.fixture
def recording_coordinator() -> type[RecordingCoordinator]:
    return RecordingCoordinator


# --------------------------------------------------------------------------- `tsumugi dev` as a child process
# DevProcess, free_port and wait_for live in tests/dev_child.py (the CLI's tests use them too); they are
# re-exported here for the tests that import them from this module.
__all__ = ["DevProcess", "free_port", "wait_for"]


@pytest.fixture
def spawn_dev() -> Iterator[Callable[..., DevProcess]]:
    """Start `tsumugi dev` children; any still running at teardown is killed."""
    children: list[DevProcess] = []

    def spawn(app: str | None, state_dir: Path, env: dict[str, str], port: int | None = None) -> DevProcess:
        child = DevProcess(app, state_dir, env, port)
        children.append(child)
        return child

    yield spawn
    for child in children:
        if child.process.poll() is None:
            child.kill()


@pytest.fixture
def poll() -> Callable[[Callable[[], Any], float, str], Any]:
    return wait_for


@pytest.fixture
def closing() -> Iterator[Callable[[Any], Any]]:
    """Register a store (anything with ``close()``) to be closed at teardown; returns it."""
    opened: list[Any] = []

    def register(store: Any) -> Any:
        opened.append(store)
        return store

    yield register
    for store in reversed(opened):
        store.close()
