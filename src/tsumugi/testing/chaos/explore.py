"""Simulate, search seeds for a failure, shrink it to a minimal schedule, and say how to replay it.

Every seeded schedule is drawn on the events of one fault-free run (the census, always run with
``CENSUS_SEED``), so ``simulate(seed=s)`` draws exactly the schedule ``find_failure`` drew for ``s``.
Shrinking drops one fault at a time, keeping each drop after which the failure persists (a violation
of a rule the first failure broke), until no single fault can go.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypedDict, Unpack

from tsumugi.application import Tsumugi
from tsumugi.testing.chaos.checks import Invariant, check_guarantees, check_invariants
from tsumugi.testing.chaos.errors import ChaosFailureError
from tsumugi.testing.chaos.records import ChaosReport
from tsumugi.testing.chaos.schedule import DEFAULT_FAULTS, FAULT_KINDS, FaultKind, FaultSchedule, Stream
from tsumugi.testing.chaos.session import Scenario
from tsumugi.testing.chaos.world import SETTLE_WITHIN_MS, ChaosSettings, Simulation

__all__ = ["Chaos", "ChaosFailure", "check", "find_failure", "simulate"]

CENSUS_SEED: Final = 0
DEFAULT_SEEDS: Final = range(20)  # twenty schedules of four faults: every kind lands a few times
ENGINE_LOGGERS: Final = ("tsumugi", "asyncio")
MEMORY_DIR: Final = "/dev/shm"  # Linux's tmpfs


Bindings = Callable[[], Mapping[str, object]]  # makes the env bindings of one simulation


class CommonOptions(TypedDict, total=False):
    """The options ``simulate`` and ``find_failure`` share but ``workdir``: the defaults ``Chaos`` binds."""

    faults: int
    kinds: Collection[FaultKind]
    invariants: Iterable[Invariant]
    bindings: Bindings | None
    run_for_ms: int
    settle_within_ms: int
    engine_logs: bool


class SimulateOptions(CommonOptions, total=False):
    workdir: Path | None
    seed: int
    schedule: FaultSchedule | None


class FindOptions(CommonOptions, total=False):
    workdir: Path | None
    seeds: Iterable[int]
    shrink: bool


@dataclass(frozen=True, slots=True)
class ChaosFailure:
    """A failing seed: its first report, the minimal one shrinking reached, and the runs it took."""

    found: ChaosReport
    minimal: ChaosReport
    simulations: int

    @property
    def seed(self) -> int:
        return self.minimal.seed

    @property
    def schedule(self) -> FaultSchedule:
        return self.minimal.schedule

    def __str__(self) -> str:
        kept, drawn = len(self.minimal.schedule.faults), len(self.found.schedule.faults)
        return (
            f"chaos: seed {self.seed} breaks {', '.join(sorted(self.minimal.rules()))}\n"
            f"drawn: {self.found.schedule}\n"
            f"minimal schedule ({kept} of {drawn} faults, {self.simulations} simulations):\n"
            f"{self.minimal}\n"
            f"replay: simulate(app, scenario, schedule=FaultSchedule.parse({str(self.schedule)!r}, "
            f"seed={self.seed}))"
        )


@dataclass(frozen=True, slots=True)
class _Explorer:
    app: Tsumugi
    scenario: Scenario
    settings: ChaosSettings
    workdir: Path | None

    async def run(self, schedule: FaultSchedule | None, seed: int) -> tuple[ChaosReport, dict[Stream, int]]:
        scratch = self.workdir if self.workdir is not None else _memory_backed()
        with tempfile.TemporaryDirectory(prefix="tsumugi-chaos-", dir=scratch) as state_dir:
            simulation = Simulation(self.app, self.scenario, schedule, self.settings, Path(state_dir), seed)
            with _engine_logs(self.settings.engine_logs):
                outcome = await simulation.run()
            violations = check_guarantees(outcome)
            violations += await check_invariants(outcome, self.settings.invariants)
        report = ChaosReport(schedule or FaultSchedule(seed), outcome, tuple(violations))
        return report, dict(simulation.injector.counts)

    async def schedule_for(self, seed: int, faults: int, kinds: Collection[FaultKind]) -> FaultSchedule:
        census, events = await self.run(None, CENSUS_SEED)
        if not census.ok:
            return FaultSchedule(seed)  # it fails with no fault at all: that is the minimal schedule
        return FaultSchedule.generate(seed, events, faults, kinds)

    async def shrink(self, report: ChaosReport) -> tuple[ChaosReport, int]:
        rules, best, simulations = report.rules(), report, 0
        shrunk = True
        while shrunk:
            shrunk = False
            for index in range(len(best.schedule.faults)):
                candidate, _ = await self.run(best.schedule.without(index), best.seed)
                simulations += 1
                if candidate.rules() & rules:
                    best, shrunk = candidate, True
                    break
        return best, simulations


def _memory_backed() -> Path | None:
    """A memory-backed directory if there is one: a simulation's files need no disk, and on one each
    run spends most of its time creating, syncing and deleting them (8x slower). None: the temp dir."""
    shm = Path(MEMORY_DIR)
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


@contextmanager
def _engine_logs(keep: bool) -> Iterator[None]:
    """Silence the engine's own logging of the faults it is being fed, unless asked to keep it."""
    if keep:
        yield
        return
    loggers = [logging.getLogger(name) for name in ENGINE_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _settings(
    invariants: Iterable[Invariant],
    bindings: Bindings | None,
    run_for_ms: int,
    settle_within_ms: int,
    engine_logs: bool,
) -> ChaosSettings:
    return ChaosSettings(tuple(invariants), bindings, run_for_ms, settle_within_ms, engine_logs=engine_logs)


async def simulate(
    app: Tsumugi,
    scenario: Scenario,
    *,
    seed: int = 0,
    schedule: FaultSchedule | None = None,
    faults: int = DEFAULT_FAULTS,
    kinds: Collection[FaultKind] = FAULT_KINDS,
    invariants: Iterable[Invariant] = (),
    bindings: Bindings | None = None,
    run_for_ms: int = 0,
    settle_within_ms: int = SETTLE_WITHIN_MS,
    engine_logs: bool = False,
    workdir: Path | None = None,
) -> ChaosReport:
    """Run ``scenario`` on ``app`` once under ``schedule``, or under the schedule ``seed`` draws.

    ``bindings`` makes the env bindings of one simulation (fakes of the outside world, which survive
    its crashes); ``invariants`` are called with the ``ChaosOutcome``. Returns the report, ok or not.
    """
    settings = _settings(invariants, bindings, run_for_ms, settle_within_ms, engine_logs)
    explorer = _Explorer(app, scenario, settings, workdir)
    if schedule is None:
        schedule = await explorer.schedule_for(seed, faults, kinds)
    report, _ = await explorer.run(schedule, schedule.seed)
    return report


async def find_failure(
    app: Tsumugi,
    scenario: Scenario,
    *,
    seeds: Iterable[int] = DEFAULT_SEEDS,
    shrink: bool = True,
    faults: int = DEFAULT_FAULTS,
    kinds: Collection[FaultKind] = FAULT_KINDS,
    invariants: Iterable[Invariant] = (),
    bindings: Bindings | None = None,
    run_for_ms: int = 0,
    settle_within_ms: int = SETTLE_WITHIN_MS,
    engine_logs: bool = False,
    workdir: Path | None = None,
) -> ChaosFailure | None:
    """The first seed whose schedule breaks something, shrunk to a minimal schedule; None if none does."""
    settings = _settings(invariants, bindings, run_for_ms, settle_within_ms, engine_logs)
    explorer = _Explorer(app, scenario, settings, workdir)
    census, events = await explorer.run(None, CENSUS_SEED)
    if not census.ok:
        return ChaosFailure(census, census, 1)
    simulations = 1
    for seed in seeds:
        report, _ = await explorer.run(FaultSchedule.generate(seed, events, faults, kinds), seed)
        simulations += 1
        if report.ok:
            continue
        minimal, more = await explorer.shrink(report) if shrink else (report, 0)
        return ChaosFailure(report, minimal, simulations + more)
    return None


async def check(app: Tsumugi, scenario: Scenario, **options: Unpack[FindOptions]) -> None:
    """``find_failure`` with the same options; raises ``ChaosFailureError`` describing the failure."""
    failure = await find_failure(app, scenario, **options)
    if failure is not None:
        raise ChaosFailureError(failure)


class Chaos:
    """The ``chaos`` pytest fixture: the three entry points with a work directory and defaults bound."""

    def __init__(self, workdir: Path | None = None, **defaults: Unpack[CommonOptions]) -> None:
        self.workdir = workdir
        self.defaults: CommonOptions = defaults

    async def simulate(
        self, app: Tsumugi, scenario: Scenario, **options: Unpack[SimulateOptions]
    ) -> ChaosReport:
        bound: SimulateOptions = {"workdir": self.workdir, **self.defaults, **options}
        return await simulate(app, scenario, **bound)

    async def find_failure(
        self, app: Tsumugi, scenario: Scenario, **options: Unpack[FindOptions]
    ) -> ChaosFailure | None:
        bound: FindOptions = {"workdir": self.workdir, **self.defaults, **options}
        return await find_failure(app, scenario, **bound)

    async def check(self, app: Tsumugi, scenario: Scenario, **options: Unpack[FindOptions]) -> None:
        bound: FindOptions = {"workdir": self.workdir, **self.defaults, **options}
        await check(app, scenario, **bound)
