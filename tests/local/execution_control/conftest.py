"""An app defined with ``define_tsumugi`` on a real ``LocalRuntime`` whose FixedClock only the test moves.

Performers record what they saw (payload, ``ctx``); a ``Gate`` holds attempts open so a test can look at
the system while jobs are in flight. Waiting polls the loop with a deadline: it waits for work the
runtime does concurrently, never stands in for time (time is the FixedClock).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests import polling

from tsumugi.application import define_tsumugi
from tsumugi.application.tsumugi import Tsumugi
from tsumugi.clock import FixedClock
from tsumugi.core.wire_format import shard_name_of
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

START = 1_700_000_000_000
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SETTLE_DEADLINE_S = 20.0


@dataclass
class Seen:
    """One attempt as the performer saw it."""

    binding: str
    payload: Any
    job_id: str
    idempotency_key: str
    attempt: int
    traceparent: str | None
    deadline_at: int


@dataclass
class Record:
    """Everything the performers of one test saw; ``gates`` hold attempts of a payload open."""

    seen: list[Seen] = field(default_factory=list)
    running: dict[str, int] = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)
    gates: dict[Any, asyncio.Event] = field(default_factory=dict)

    def of(self, binding: str) -> list[Seen]:
        return [s for s in self.seen if s.binding == binding]


RECORD = Record()


class Recording(Performer):
    """Records the attempt; a payload ``{"fail": msg}`` raises, ``{"gate": g}`` waits for ``open(g)``."""

    binding = "?"

    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        RECORD.seen.append(
            Seen(
                self.binding,
                payload,
                ctx.job_id,
                ctx.idempotency_key,
                ctx.attempt,
                ctx.traceparent,
                ctx.deadline_at,
            )
        )
        key = payload.get("key") if isinstance(payload, Mapping) else None
        lane = f"{self.binding}/{key}"
        RECORD.running[lane] = RECORD.running.get(lane, 0) + 1
        RECORD.peak[lane] = max(RECORD.peak.get(lane, 0), RECORD.running[lane])
        try:
            if isinstance(payload, Mapping) and "gate" in payload:
                await RECORD.gates.setdefault(payload["gate"], asyncio.Event()).wait()
            if isinstance(payload, Mapping) and "fail" in payload:
                raise RuntimeError(payload["fail"])
            return payload.get("result") if isinstance(payload, Mapping) else None
        finally:
            RECORD.running[lane] -= 1


class Mail(Recording):
    binding = "MAIL"


class Alert(Recording):
    binding = "ALERT"


class Audit(Recording):
    binding = "AUDIT"


PERFORMERS: Mapping[str, type[Performer]] = {"MAIL": Mail, "ALERT": Alert, "AUDIT": Audit}


class Local:
    """The app, its runtime and the FixedClock both share; helpers read shards through the public API."""

    def __init__(self, app: Tsumugi, runtime: LocalRuntime, clock: FixedClock) -> None:
        self.app = app
        self.runtime = runtime
        self.clock = clock
        self.record = RECORD

    @property
    def env(self) -> Any:
        return self.runtime.env

    async def enqueue(self, **options: Any) -> str:
        options.setdefault("binding", "MAIL")
        options.setdefault("payload", {})
        return await self.app.enqueue(self.env, **options)

    async def state(self, job_id: str) -> str | None:
        state: str | None = await self.env.JOB_SHARD.get(shard_name_of(job_id)).state_of(job_id)
        return state

    def shard(self, name: str) -> Any:
        return self.env.JOB_SHARD.get(name)

    async def until(self, condition: Callable[[], Awaitable[bool] | bool], what: str) -> None:
        """Let the runtime work until ``condition`` holds; fail after a generous deadline."""
        await polling.until(condition, what, SETTLE_DEADLINE_S)

    async def settled(self, job_id: str, state: str | None) -> None:
        """Wait until the job reaches ``state`` (None: swept from its shard)."""

        async def reached() -> bool:
            return await self.state(job_id) == state

        await self.until(reached, f"{job_id} to reach {state}")

    async def advance(self, ms: int) -> None:
        """Move the FixedClock and fire the alarms that became due, as the platform would."""
        self.clock.advance(ms)
        await self.runtime.alarms.fire_due()

    def open(self, gate: Any) -> None:
        RECORD.gates.setdefault(gate, asyncio.Event()).set()


MakeLocal = Callable[..., Awaitable[Local]]


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[MakeLocal]:
    """``await local(**define_tsumugi_options, runtime={...})`` starts an app; stopped at teardown."""
    RECORD.seen.clear()
    RECORD.running.clear()
    RECORD.peak.clear()
    RECORD.gates.clear()
    started: list[LocalRuntime] = []

    async def make(*, runtime: Mapping[str, Any] | None = None, **definition: Any) -> Local:
        definition.setdefault("performers", PERFORMERS)
        app = define_tsumugi(**definition)
        clock = FixedClock(START)
        app.clock = clock  # the consumer's expiry check and reports use the same clock (J-41)
        options = {"cron": False, **(runtime or {})}
        instance = LocalRuntime(
            app, tmp_path / f"state{len(started)}", clock=clock, exports=PERFORMERS, **options
        )
        await instance.start()
        started.append(instance)
        return Local(app, instance, clock)

    yield make
    for gate in RECORD.gates.values():
        gate.set()
    for instance in started:
        await instance.stop(grace_s=1.0)
