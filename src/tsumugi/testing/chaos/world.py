"""One simulation: the user's app on ``LocalRuntime`` under a ``SimulatedClock``, driven event to event.

The scenario runs first (deliveries wait for it); then the simulation lets the runtime work until no
task can move, moves the clock to the next instant anything waits for (an alarm, a sleeper, a queue
lease), fires what fell due, and so on, until every job and run has ended or time is up. A crash
stops the runtime with every write failing, then starts a new one on the same files (ADR-0142).
"""

from __future__ import annotations

import asyncio
import logging
import random
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

from tsumugi.application import Tsumugi
from tsumugi.core.states import TERMINAL_STATES
from tsumugi.core.wire_format import shard_name_of
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.testing.chaos.checks import Invariant
from tsumugi.testing.chaos.errors import ChaosError
from tsumugi.testing.chaos.injector import Injector
from tsumugi.testing.chaos.perform_hook import ChaosResolver
from tsumugi.testing.chaos.quiescence import settle
from tsumugi.testing.chaos.records import ChaosOutcome, JobRecord
from tsumugi.testing.chaos.schedule import FaultSchedule
from tsumugi.testing.chaos.seams import ChaosApp
from tsumugi.testing.chaos.session import ChaosSession, Scenario
from tsumugi.testing.chaos.sim_clock import SimulatedClock
from tsumugi.testing.chaos.sim_ids import replayable_ids
from tsumugi.testing.chaos.wiring import ChaosWiring
from tsumugi.testing.faults import StorageFaults

__all__ = ["ChaosSettings", "Simulation"]

log = logging.getLogger("tsumugi.testing.chaos")

START_MS: Final = 1_700_000_000_000
# Time allowed to recover after the scenario: reaper rounds (60 s + 30 s each, J-111) and retries
# whose backoff caps at an hour (J-102) fit many times over.
SETTLE_WITHIN_MS: Final = 6 * 3_600_000
MAX_STEPS: Final = 20_000  # clock moves per simulation; a small app settles in tens
# The job-row columns (storage/shard_schema.py) the checks need, read from each shard's own store.
_JOBS: Final = "SELECT id, binding, state, guarantee, attempts, run_id FROM job"


@dataclass(frozen=True, slots=True)
class ChaosSettings:
    """What every simulation of one exploration shares."""

    invariants: tuple[Invariant, ...] = ()
    bindings: Callable[[], Mapping[str, object]] | None = None  # env bindings made fresh per simulation
    run_for_ms: int = 0  # simulated time to keep going before stopping at the first quiet moment
    settle_within_ms: int = SETTLE_WITHIN_MS
    max_steps: int = MAX_STEPS
    engine_logs: bool = False  # the engine logs every injected fault; off unless asked for


class Simulation:
    """Runs ``scenario`` on ``app`` once, under ``schedule`` (None: no fault, only counting events)."""

    def __init__(
        self,
        app: Tsumugi,
        scenario: Scenario,
        schedule: FaultSchedule | None,
        settings: ChaosSettings,
        state_dir: Path,
        seed: int,
    ) -> None:
        self._app = app
        self._scenario = scenario
        self._settings = settings
        self._state_dir = state_dir
        self.clock = SimulatedClock(START_MS)
        self.faults = StorageFaults()
        self.injector = Injector(schedule, self.clock, self.faults)
        self.deliveries_open = asyncio.Event()
        self.bindings: dict[str, object] = dict(settings.bindings()) if settings.bindings else {}
        self.jobs: dict[str, JobRecord] = {}
        self.enqueued: list[str] = []
        self.started: list[str] = []
        self._rand = random.Random(seed).random  # the engine's backoff jitter, replayed by the seed

    async def run(self) -> ChaosOutcome:
        with replayable_ids():
            await self._incarnate()
            try:
                await self._scenario(ChaosSession(self))
                self.injector.armed = True
                self.deliveries_open.set()
                settled = await self._drive()
                runs = await self._runs()
            finally:
                await self._shutdown()
        injector = self.injector
        return ChaosOutcome(
            jobs=dict(self.jobs),
            runs=runs,
            bindings=self.bindings,
            performs=tuple(injector.performs),
            reports=tuple(injector.reports),
            injected=tuple(injector.injected),
            enqueued=tuple(self.enqueued),
            started=tuple(self.started),
            settled=settled,
            started_at_ms=START_MS,
            ended_at_ms=self.clock.now(),
        )

    # ------------------------------------------------------------------ incarnations
    async def _incarnate(self) -> None:
        """A fresh process on the same files: a new app object, wiring and runtime."""
        injector, clock, generation = self.injector, self.clock, self.injector.generation
        resolvers = self._app.resolver_factory
        self.twin = Tsumugi(
            self._app.definition,
            clock=clock,
            resolver_factory=lambda ctx: ChaosResolver(resolvers(ctx), injector, clock, generation),
            read_model_sweeper=self._app.read_model_sweeper,
        )
        self.wiring = ChaosWiring(self.faults, injector, self._rand)
        self.runtime = LocalRuntime(
            ChaosApp(self.twin, self, generation),
            self._state_dir,
            clock=clock,
            vars=cast("Mapping[str, str]", self.bindings),  # any object binds; vars are only the usual kind
            wiring=self.wiring,
            cron=False,  # the read-model sweep's cron runs on real time, and guarantees nothing
        )
        await self.runtime.start()

    async def _restart(self) -> None:
        """The crash the injector asked for: stop with every write failing, then start again."""
        injector = self.injector
        self._observe()  # the last look at this incarnation's stores (reads still work)
        injector.generation += 1
        try:
            await self.runtime.stop(grace_s=0)
        except Exception:  # a dying process leaves things half done; the next start copes (ADR-0052)
            log.debug("chaos: stopping the crashed runtime raised", exc_info=True)
        injector.release()
        self.faults.clear()
        injector.crash_reason = None
        await self._incarnate()

    async def _shutdown(self) -> None:
        self.injector.generation += 1  # whatever still waits belongs to no live process
        try:
            await self.runtime.stop(grace_s=0)
        finally:
            self.injector.release()
            self.clock.abandon()
            await settle(self.injector, rounds_only=True)

    # ------------------------------------------------------------------ time
    async def jump(self, ms: int) -> None:
        """A clock jump inside a delivery: look at the shards first, then let the time pass."""
        self._observe()
        await self._move_to(self.clock.now() + ms)

    async def _drive(self) -> bool:
        """Step from event to event; whether everything ended before ``settle_within_ms`` ran out."""
        clock, settings = self.clock, self._settings
        run_until = clock.now() + settings.run_for_ms
        give_up_at = run_until + settings.settle_within_ms
        for _ in range(settings.max_steps):
            await settle(self.injector)
            if self.injector.crash_reason is not None:
                await self._restart()
                continue
            self._observe()
            if clock.now() >= run_until and await self._quiet():
                return True
            at = self._next_event_at(run_until)
            if at is None or at > give_up_at:
                return False
            await self._move_to(at)
        raise ChaosError(f"the simulation took more than {settings.max_steps} clock moves")

    def _next_event_at(self, run_until: int) -> int | None:
        now, runtime = self.clock.now(), self.runtime
        candidates = [self.clock.next_wake_at(), runtime.queue.next_visible_at(), run_until]
        candidates += runtime.alarms.pending().values()
        return min((at for at in candidates if at is not None and at > now), default=None)

    async def _move_to(self, at: int) -> None:
        self.clock.set(at)
        self.runtime.queue.arrived.set()  # a lease that ran out makes its message visible: look again
        await self.runtime.alarms.fire_due()

    async def _quiet(self) -> bool:
        """Nothing waits, nothing is due, every job and run has ended."""
        runtime, now = self.runtime, self.clock.now()
        if self.clock.sleepers() or runtime.queue.depth():
            return False
        if any(at <= now for at in runtime.alarms.pending().values()):
            return False
        if any(job.present and job.state not in TERMINAL_STATES for job in self.jobs.values()):
            return False
        return all(state != "RUNNING" for state in (await self._runs()).values())

    # ------------------------------------------------------------------ looking at the stores
    def _observe(self) -> None:
        """Record every job each shard holds; a job it no longer holds is marked absent.

        Every shard on disk is opened first: a restarted runtime opens one only when it is called, and
        a clock jump may sweep ended jobs before that.
        """
        # J-170
        for name in self.runtime.shards.names_on_disk():
            if name not in self.wiring.shard_stores:
                try:
                    self.runtime.shards.coordinator(name)
                except sqlite3.Error:
                    continue  # it cannot open now (the process is dying): seen at the next look
        for shard, store in list(self.wiring.shard_stores.items()):
            try:
                rows = store.execute(_JOBS)
            except sqlite3.Error:
                continue  # not created yet, or closed: what was seen before stands
            held: set[str] = set()
            for job_id, binding, state, guarantee, attempts, run_id in rows:
                key = str(job_id)
                held.add(key)
                job = self.jobs.get(key)
                if job is None:
                    parent = None if run_id is None else str(run_id)
                    job = self.jobs[key] = JobRecord(key, str(binding), str(guarantee), str(state), 0, parent)
                job.state, job.attempts, job.present = str(state), int(attempts or 0), True
                job.was_terminal = job.was_terminal or job.state in TERMINAL_STATES
            for job in self.jobs.values():
                if job.present and job.id not in held and shard_name_of(job.id) == shard:
                    job.present = False

    async def _runs(self) -> dict[str, str | None]:
        namespace = self.runtime.env.get("RUN")
        coordinators = getattr(namespace, "coordinators", None)
        if namespace is None or coordinators is None:
            return {}
        return {name: await namespace.get(name).state() for name in coordinators.names_on_disk()}
