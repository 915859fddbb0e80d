"""Where faults enter: the consumer's handler, the shard stubs it calls, the performers, the coordinators.

None of these changes engine code; each wraps what the local runtime already lets a caller supply:

* ``ChaosApp`` is the app ``LocalRuntime`` hosts: its ``queue`` is the consumer's handler, so it sees
  every delivery (``redeliver``, ``clock_jump``) and hands the engine's consumer an ``env`` whose
  ``JOB_SHARD`` is a ``ChaosShardNamespace``.
* ``ChaosShardStub`` is what that consumer reports, heartbeats and claims through (``lose_report``,
  ``crash_before_report``, ``heartbeat_stop``).
* ``perform_hook.ChaosPerform`` hooks the ``perform`` of what the app's resolver returns
  (``crash_before_perform``, ``timeout``, ``heartbeat_stop``) and records every attempt.
* ``ChaosCoordinator`` wraps what the wiring builds, so a tick can die half-way (``restart_mid_tick``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol

from tsumugi.client import SHARD_NAMESPACE, env_binding
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import QueueMessage, ShardNamespace, ShardRpc
from tsumugi.runtimes.local.local_env import LocalEnv
from tsumugi.runtimes.local.serial_coordinators import Coordinator
from tsumugi.testing.chaos.injector import Injector
from tsumugi.testing.chaos.sim_clock import SimulatedClock
from tsumugi.testing.faults import IO_ERROR

__all__ = ["ChaosApp", "ChaosCoordinator", "ChaosShardNamespace", "ChaosShardStub", "Host"]


class Host(Protocol):
    """What the seams need of the simulation that owns them."""

    injector: Injector
    clock: SimulatedClock
    deliveries_open: asyncio.Event

    async def jump(self, ms: int) -> None:
        """Move the clock ``ms`` forward and fire what falls due, as time passing would."""
        ...


class QueueHandler(Protocol):
    """The user's app as the seams see it: its queue consumer (``Tsumugi.queue``)."""

    async def queue(self, batch: Sequence[QueueMessage], env: object, ctx: object = None) -> object: ...


class ChaosApp:
    """The app ``LocalRuntime`` hosts: the user's app, whose consumer handler faults pass through."""

    def __init__(self, inner: QueueHandler, host: Host, generation: int) -> None:
        self._inner = inner
        self._host = host
        self._generation = generation
        self._env: LocalEnv | None = None

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)  # definition, flows, schedules, binding settings, ...

    async def queue(self, batch: Sequence[QueueMessage], env: LocalEnv, ctx: object = None) -> None:
        host, injector = self._host, self._host.injector
        await host.deliveries_open.wait()  # held while the scenario enqueues, the same in every run
        messages = list(batch)  # the local runtime hands over a list of messages
        again: list[QueueMessage] = []
        for message in messages:
            body = message.body
            job_id = str(body.get("jobId")) if isinstance(body, Mapping) else "?"
            if isinstance(body, Mapping) and body.get("claimRequired"):
                injector.at_most_once.add(job_id)
            fired = injector.hit("delivery", job_id)
            if "redeliver" in fired:
                again.append(message)
            if "clock_jump" in fired and injector.alive(self._generation):
                await host.jump(fired["clock_jump"].param)  # the message waited that long to arrive
        await self._inner.queue(messages, self._chaos_env(env), ctx)
        if injector.alive(self._generation):
            for message in again:
                message.retry()  # after its ack: the queue delivers it once more (at-least-once)

    def _chaos_env(self, env: LocalEnv) -> LocalEnv:
        if self._env is None:
            bindings: dict[str, object] = dict(vars(env))
            shards: ShardNamespace = env_binding(env, SHARD_NAMESPACE)
            bindings["JOB_SHARD"] = ChaosShardNamespace(shards, self._host.injector, self._generation)
            self._env = LocalEnv(bindings)
        return self._env


class ChaosShardNamespace:
    """``env.JOB_SHARD`` as the consumer sees it: stubs that may lose or never send what it sends."""

    def __init__(self, inner: ShardNamespace, injector: Injector, generation: int) -> None:
        self._inner = inner
        self._injector = injector
        self._generation = generation

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def get(self, name: str) -> ChaosShardStub:
        return ChaosShardStub(self._inner.get(name), self._injector, self._generation)


class ChaosShardStub:
    """A shard stub whose ``report``, ``heartbeat`` and ``claim`` go through the injector."""

    def __init__(self, inner: ShardRpc, injector: Injector, generation: int) -> None:
        self._inner = inner
        self._injector = injector
        self._generation = generation

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)  # the shard's other RPCs, unchanged

    async def report(self, job_id: str, outcome: Mapping[str, object]) -> None:
        injector = self._injector
        if not injector.alive(self._generation):
            await injector.hang()
        given, ok = outcome.get("attempt"), bool(outcome.get("ok"))
        attempt = given if isinstance(given, int) else None  # an outcome may leave it out
        fired = injector.hit("report", job_id)
        seq = injector.seq
        if "crash_before_report" in fired:
            injector.reported(job_id, attempt, ok, seq, delivered=False)
            injector.crash(f"crash between perform and report of {job_id}")
            await injector.hang()
        if "lose_report" in fired:
            injector.reported(job_id, attempt, ok, seq, delivered=False)
            return  # lost on the way: the consumer believes it was sent (J-118)
        await self._inner.report(job_id, outcome)
        injector.reported(job_id, attempt, ok, seq, delivered=True)

    async def heartbeat(self, job_id: str, progress: object = None, attempt: int | None = None) -> JsonObject:
        if not self._injector.alive(self._generation):
            await self._injector.hang()
        if self._injector.silenced(job_id, attempt):
            raise ConnectionError(f"chaos: the heartbeat of {job_id} was lost")  # swallowed (J-65)
        return await self._inner.heartbeat(job_id, progress, attempt)

    async def claim(self, job_id: str) -> bool:
        if not self._injector.alive(self._generation):
            await self._injector.hang()
        return bool(await self._inner.claim(job_id))


class ChaosCoordinator:
    """A coordinator (job shard, run, scheduler) whose alarm tick the process may die in."""

    def __init__(self, inner: Coordinator, name: str, injector: Injector) -> None:
        self._inner = inner
        self._name = name
        self._injector = injector

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)  # the coordinator's RPCs, unchanged

    async def alarm(self) -> None:
        injector = self._injector
        fired = injector.hit("tick", self._name)
        crash = fired.get("restart_mid_tick")
        if crash is None or injector.crash_reason is not None:
            await self._inner.alarm()
            return
        # From the tick's param-th write on, nothing reaches any disk: the process died there.
        injector.faults.fail(IO_ERROR, nth=max(1, crash.param), times=None)
        try:
            await self._inner.alarm()
        finally:
            injector.crash(f"restart in the middle of a tick of {self._name}")
