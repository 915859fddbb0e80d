"""A ``define_tsumugi`` app on a real ``LocalRuntime`` driven by a FixedClock, seen through the public API.

The conformance suites check the two seed pages (``/work/shared/seeds``) using only what a user has:
``define_tsumugi``, ``enqueue``, ``shard_for``, the REST API (in-process over ASGI) and ``tsumugi.testing``.
Performers record what they saw; ``gates`` hold attempts open. Waiting polls the loop with a deadline for
work the runtime does concurrently; time itself is the FixedClock, moved only by the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests import polling

from tsumugi import (
    FixedClock,
    JobContext,
    Performer,
    Tsumugi,
    bearer_auth,
    define_tsumugi,
    parse_job_id,
    shard_for,
)
from tsumugi.runtimes.local.runtime import LocalRuntime

START = 1_700_000_000_000
TOKEN = "conformance-token"
SETTLE_DEADLINE_S = 20.0


@dataclass
class Seen:
    """One attempt as the performer saw it."""

    binding: str
    payload: Any
    job_id: str
    attempt: int


@dataclass
class Record:
    seen: list[Seen] = field(default_factory=list)
    running: dict[str, int] = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    cancel_seen: list[str] = field(default_factory=list)
    failed_once: set[str] = field(default_factory=set)
    beats: int = 0

    def of(self, binding: str) -> list[Seen]:
        return [s for s in self.seen if s.binding == binding]

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())


RECORD = Record()


class Recording(Performer):
    """Payload keys steer it: ``gate`` waits for ``open``, ``watch`` heartbeats until cancel is requested
    (then raises, as the seed's example does), ``spawn`` lists ``[id, binding, payload]`` children, ``fail``
    raises, ``fail_once`` raises the first time its name is seen,
    ``fail_attempt`` raises in that attempt only, ``big`` returns that many characters, ``result``
    is returned."""

    binding = "?"

    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        RECORD.seen.append(Seen(self.binding, payload, ctx.job_id, ctx.attempt))
        spec = payload if isinstance(payload, Mapping) else {}
        lane = f"{self.binding}/{spec.get('key')}"
        RECORD.running[lane] = RECORD.running.get(lane, 0) + 1
        RECORD.peak[lane] = max(RECORD.peak.get(lane, 0), RECORD.running[lane])
        try:
            if "watch" in spec:
                gate = RECORD.gate(spec["watch"])
                while True:
                    answer = await ctx.heartbeat(0.5)
                    RECORD.beats += 1
                    if answer.cancel_requested:
                        RECORD.cancel_seen.append(ctx.job_id)
                        raise RuntimeError("cancelled")
                    if gate.is_set():
                        break
                    await asyncio.sleep(0.002)  # a performer polling its request (noqa: sleep-ok)
            for child_id, child_binding, child_payload in spec.get("spawn", []):
                ctx.spawn(child_id, child_binding, child_payload)
            if "gate" in spec:
                await RECORD.gate(spec["gate"]).wait()
            if "fail" in spec:
                raise RuntimeError(spec["fail"])
            if "fail_once" in spec and spec["fail_once"] not in RECORD.failed_once:
                RECORD.failed_once.add(spec["fail_once"])
                raise RuntimeError(f"{spec['fail_once']} fails once on purpose")
            if spec.get("fail_attempt") == ctx.attempt:
                raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
            if "big" in spec:
                return "x" * spec["big"]
            return spec.get("result")
        finally:
            RECORD.running[lane] -= 1


class Mail(Recording):
    binding = "MAIL"


class Charge(Recording):
    binding = "CHARGE"


class Alert(Recording):
    binding = "ALERT"


class Audit(Recording):
    binding = "AUDIT"


class Broken(Performer):
    """Always fails (a notification destination whose webhook is down)."""

    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        RECORD.seen.append(Seen("BROKEN", payload, ctx.job_id, ctx.attempt))
        raise RuntimeError("notification failed: 500")


PERFORMERS: Mapping[str, type[Performer]] = {
    "MAIL": Mail,
    "CHARGE": Charge,
    "ALERT": Alert,
    "AUDIT": Audit,
    "BROKEN": Broken,
}


class Local:
    """The app, its runtime and their shared FixedClock."""

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

    def shard(self, binding: str = "MAIL", partition_key: str | None = None) -> Any:
        return self.app.shard_for(self.env, binding, partition_key)

    async def state(self, job_id: str) -> str | None:
        parsed = parse_job_id(job_id)
        state: str | None = await shard_for(self.env, parsed.binding, parsed.shard).state_of(job_id)
        return state

    async def until(self, condition: Callable[[], Awaitable[bool] | bool], what: str) -> None:
        """Let the runtime work until ``condition`` holds; fail after a generous deadline."""
        await polling.until(condition, what, SETTLE_DEADLINE_S)

    async def settled(self, job_id: str, state: str | None) -> None:
        async def reached() -> bool:
            return await self.state(job_id) == state

        await self.until(reached, f"{job_id} to reach {state}")

    async def waiting_for_retry(self, job_id: str) -> None:
        """Wait until an attempt of ``job_id`` failed and the job is SCHEDULED again."""

        async def retrying() -> bool:
            ran = any(s.job_id == job_id for s in self.record.seen)
            return ran and await self.state(job_id) == "SCHEDULED"

        await self.until(retrying, f"{job_id} to wait for its retry")

    async def advance(self, ms: int) -> None:
        """Move the FixedClock and fire the alarms that became due, as the platform would."""
        self.clock.advance(ms)
        await self.runtime.alarms.fire_due()

    async def advance_until(
        self, condition: Callable[[], Awaitable[bool]], what: str, step_ms: int, max_ms: int
    ) -> int:
        """Move the clock ``step_ms`` at a time until ``condition`` holds; the clock time that took.

        For work another coordinator records asynchronously (a run's tick asking a job to cancel), where the
        exact instant it lands is not the point of the test.
        """
        began = self.clock.now()
        while not await condition():
            if self.clock.now() - began >= max_ms:
                raise AssertionError(f"{what} did not happen within {max_ms} ms of clock time")
            await self.advance(step_ms)
            await asyncio.sleep(0.01)  # let the runtime's tasks see the new time (noqa: sleep-ok)
        return self.clock.now() - began

    def open(self, gate: str) -> None:
        RECORD.gate(gate).set()

    @asynccontextmanager
    async def rest(self) -> AsyncIterator[httpx.AsyncClient]:
        transport = httpx.ASGITransport(app=self.app.asgi(self.env))
        headers = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://local", headers=headers) as client:
            yield client

    async def detail(self, client: httpx.AsyncClient, job_id: str, state: str) -> dict[str, Any]:
        """``GET /api/jobs/{id}`` once the read model shows ``state`` (it is projected on ticks)."""
        found: dict[str, Any] = {}

        async def projected() -> bool:
            answer = await client.get(f"/api/jobs/{path_id(job_id)}")
            if answer.status_code == 200 and answer.json()["job"]["state"] == state:
                found.update(answer.json()["job"])
                return True
            await self.advance(1_000)  # the projection of a fresh job waits about a second (ADR-0119)
            return False

        await self.until(projected, f"the read model to show {job_id} {state}")
        return found

    async def run_state(self, run_id: str) -> str | None:
        state: str | None = await self.app.run_for(self.env, run_id).state()
        return state

    async def run_settled(self, run_id: str, state: str) -> None:
        async def reached() -> bool:
            return await self.run_state(run_id) == state

        await self.until(reached, f"run {run_id} to reach {state}")

    async def run_detail(self, client: httpx.AsyncClient, run_id: str, state: str) -> dict[str, Any]:
        """``GET /api/runs/{id}`` once the read model shows the run in ``state`` with every node settled."""
        found: dict[str, Any] = {}

        async def projected() -> bool:
            answer = await client.get(f"/api/runs/{path_id(run_id)}")
            if answer.status_code == 200:
                body = answer.json()
                run = body["run"]
                if run["state"] == state and run["node_done"] == run["node_total"]:
                    found.update(body)
                    return True
            await self.advance(1_000)  # projection runs on ticks
            return False

        await self.until(projected, f"the read model to show run {run_id} {state}")
        return found


def nodes_by_id(detail: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["id"]: node for node in detail["nodes"]}


def path_id(identifier: str) -> str:
    return quote(identifier, safe="")


MakeLocal = Callable[..., Awaitable[Local]]


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[MakeLocal]:
    """``await local(**define_tsumugi_options, runtime={...})`` starts an app; stopped at teardown."""
    RECORD.seen.clear()
    RECORD.running.clear()
    RECORD.peak.clear()
    RECORD.gates.clear()
    RECORD.cancel_seen.clear()
    RECORD.failed_once.clear()
    RECORD.beats = 0
    started: list[LocalRuntime] = []

    async def make(
        *,
        runtime: Mapping[str, Any] | None = None,
        silent_consumer: bool = False,
        state: str | None = None,
        **definition: Any,
    ) -> Local:
        """``silent_consumer``: the consumer runs on its own clock that never moves, so an attempt never
        times out on the consumer side and only the shard's reaper decides (a lost performer).
        ``state``: reuse a state directory (a redeploy over the same storage)."""
        definition.setdefault("performers", PERFORMERS)
        definition.setdefault("auth", bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")))
        app = define_tsumugi(**definition)
        clock = FixedClock(START)
        app.clock = FixedClock(START) if silent_consumer else clock
        options = {"cron": False, "vars": {"TSUMUGI_TOKEN": TOKEN}, **(runtime or {})}
        instance = LocalRuntime(
            app, tmp_path / (state or f"state{len(started)}"), clock=clock, exports=PERFORMERS, **options
        )
        await instance.start()
        started.append(instance)
        return Local(app, instance, clock)

    yield make
    for gate in RECORD.gates.values():
        gate.set()
    for instance in started:
        await instance.stop(grace_s=1.0)
