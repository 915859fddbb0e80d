"""The local runtime with ``tsumugi.testing.faults`` under every store it writes (not a test module).

``FaultWiring`` is the real ``EngineWiring`` whose executors (job shards, alarms, queue) and read model are
wrapped by one ``StorageFaults``. ``Faulty`` runs an app on it with a FixedClock that only the test moves:
``drive`` lets time pass the way the platform does (the clock moves, due alarms fire) and waits for the
runtime's own tasks with a deadline. Nothing else pokes the runtime: no enqueue, no call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

from tests import polling

from tsumugi.application import define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.core.wire_format import shard_name_of
from tsumugi.performer import JobContext, Performer
from tsumugi.ports import SqlExecutor
from tsumugi.runtimes.local.engine_wiring import RUNS_KIND, EngineWiring
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.testing.faults import FaultySqlDatabase, StorageFaults

START = 1_700_000_000_000
TIMEOUT_MS = 2_000  # short attempts, so the reaper (timeout + grace, J-111) recovers lost reports soon
GRACE_MS = 1_000
IDLE_DEADLINE_S = 10.0  # the runtime's tasks settle in milliseconds; generous for a loaded CI machine
SHARD_FILE = "MAIL%230.sqlite3"  # the label of shard MAIL#0's store: its file name
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "STALLED")


class FaultWiring(EngineWiring):
    """``EngineWiring`` with each store wrapped; a store's label is its file name (``alarms.sqlite3``)."""

    def __init__(self, faults: StorageFaults) -> None:
        super().__init__(rand=lambda: 0.5)
        self.faults = faults

    def executor(self, path: Path) -> SqlExecutor:
        inner = super().executor(path)
        if path.parent.name == RUNS_KIND:
            return inner  # a run's store must stay a DeferredSqliteExecutor (ADR-0116); no flows here
        return self.faults.executor(inner, label=path.name)

    def read_model(self, path: Path) -> Any:
        return self.faults.database(SqliteDatabase(path), label=path.name)

    async def prepare_read_model(self, read_model: Any) -> None:
        assert isinstance(read_model, FaultySqlDatabase)
        await super().prepare_read_model(read_model)


class Mail(Performer):
    """Counts its runs per job id; a payload ``{"gate": name}`` waits until the test opens it."""

    runs: ClassVar[dict[str, int]] = {}
    gates: ClassVar[dict[str, asyncio.Event]] = {}

    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        Mail.runs[ctx.job_id] = Mail.runs.get(ctx.job_id, 0) + 1
        if isinstance(payload, dict) and "gate" in payload:
            await Mail.gates.setdefault(payload["gate"], asyncio.Event()).wait()
        return {"done": ctx.job_id}


class Faulty:
    """An app on the local runtime over ``FaultWiring``; helpers read shards through their RPCs."""

    def __init__(self, state_dir: Path, faults: StorageFaults) -> None:
        self.faults = faults
        self.clock = FixedClock(START)
        self.app = define_tsumugi(
            performers={"MAIL": Mail}, bindings={"MAIL": {"policy": {"reaper_grace_ms": GRACE_MS}}}
        )
        self.app.clock = self.clock  # the consumer's timers and reports use the same clock
        self.runtime = LocalRuntime(
            self.app,
            state_dir,
            clock=self.clock,
            exports={"MAIL": Mail},
            wiring=FaultWiring(faults),
            cron=False,
        )

    async def start(self) -> Faulty:
        Mail.runs.clear()
        Mail.gates.clear()
        await self.runtime.start()
        await self.drive(lambda: True, steps=0)
        return self

    async def enqueue(self, **options: Any) -> str:
        options.setdefault("payload", {})
        options.setdefault("timeout_ms", TIMEOUT_MS)
        return await self.app.enqueue(self.runtime.env, binding="MAIL", **options)

    async def state(self, job_id: str) -> str | None:
        state: str | None = await self.runtime.env.JOB_SHARD.get(shard_name_of(job_id)).state_of(job_id)
        return state

    async def states(self, job_ids: list[str]) -> dict[str, str | None]:
        return {job_id: await self.state(job_id) for job_id in job_ids}

    def open(self, gate: str) -> None:
        Mail.gates.setdefault(gate, asyncio.Event()).set()

    def idle(self) -> bool:
        """No message stored (so none in delivery or awaiting its settle) and no alarm due."""
        now_ms = self.clock.now()
        due = any(at_ms <= now_ms for at_ms in self.runtime.alarms.pending().values())
        return not due and self.runtime.queue.depth() == 0

    async def drive(
        self, done: Callable[[], Awaitable[bool] | bool], *, step_ms: int = 1_000, steps: int = 60
    ) -> int:
        """Until ``done``: let the runtime settle, then move the clock ``step_ms`` and fire due alarms.

        Returns how many steps of clock it took; fails after ``steps``.
        """
        for step in range(steps + 1):
            await polling.until(self.idle, "the runtime to settle", IDLE_DEADLINE_S)
            value = done()
            if isinstance(value, Awaitable):
                value = await value
            if value:
                return step
            if step == steps:
                break
            self.clock.advance(step_ms)
            await self.runtime.alarms.fire_due()
        raise AssertionError(f"not done after {steps} steps of {step_ms} ms")

    async def stop(self) -> None:
        for gate in Mail.gates.values():
            gate.set()
        await self.runtime.stop(grace_s=1.0)
