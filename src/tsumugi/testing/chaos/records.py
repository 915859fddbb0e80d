"""What a simulation saw: attempts run, reports sent, faults injected, jobs and runs as they ended."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tsumugi.testing.chaos.schedule import Fault, FaultSchedule

__all__ = [
    "ChaosOutcome",
    "ChaosReport",
    "InjectedFault",
    "JobRecord",
    "PerformRecord",
    "ReportRecord",
    "Violation",
]

PerformEnd = Literal["returned", "raised", "cut"]  # cut: a crash or the end of the simulation stopped it


@dataclass(slots=True)
class PerformRecord:
    """One attempt that reached the performer's code (a crash before perform is not one)."""

    job_id: str
    attempt: int
    seq: int  # the simulation's event counter when the attempt started
    at_ms: int
    end: PerformEnd = "cut"


@dataclass(frozen=True, slots=True)
class ReportRecord:
    """A report the consumer sent; ``delivered`` is False when a fault kept it from the shard."""

    job_id: str
    attempt: int | None
    ok: bool
    seq: int
    delivered: bool


@dataclass(frozen=True, slots=True)
class InjectedFault:
    """A fault of the schedule that fired: on which job (or coordinator), at which instant."""

    fault: Fault
    target: str
    at_ms: int

    def __str__(self) -> str:
        return f"{self.fault} on {self.target} at {self.at_ms}"


@dataclass(slots=True)
class JobRecord:
    """A job as its shard last showed it; ``present`` is False once the shard no longer holds it."""

    id: str
    binding: str
    guarantee: str
    state: str
    attempts: int
    run_id: str | None
    present: bool = True
    was_terminal: bool = False  # seen in a terminal state at least once (it may be swept after, J-170)


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken guarantee or invariant: ``rule`` names it (``lost``, ``ran-twice``, ``invariant:...``)."""

    rule: str
    detail: str
    job_id: str | None = None

    def __str__(self) -> str:
        return f"[{self.rule}] {self.detail}"


@dataclass(frozen=True, slots=True)
class ChaosOutcome:
    """Everything an invariant may look at once the simulation settled (or gave up)."""

    jobs: Mapping[str, JobRecord]
    runs: Mapping[str, str | None]  # run id -> state (None: the run does not exist)
    bindings: Mapping[str, object]  # the objects ``bindings=`` made for this simulation
    performs: tuple[PerformRecord, ...]
    reports: tuple[ReportRecord, ...]
    injected: tuple[InjectedFault, ...]
    enqueued: tuple[str, ...]  # job ids the scenario's enqueues returned
    started: tuple[str, ...]  # run ids the scenario's starts returned
    settled: bool
    started_at_ms: int
    ended_at_ms: int

    def performs_of(self, job_id: str) -> list[PerformRecord]:
        return [p for p in self.performs if p.job_id == job_id]


@dataclass(frozen=True, slots=True)
class ChaosReport:
    """One simulation: its schedule (replayable with its seed), what fired and what broke."""

    schedule: FaultSchedule
    outcome: ChaosOutcome
    violations: tuple[Violation, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def seed(self) -> int:
        return self.schedule.seed

    def rules(self) -> set[str]:
        return {violation.rule for violation in self.violations}

    def __str__(self) -> str:
        outcome = self.outcome
        lines = [f"seed {self.seed}, faults: {self.schedule}"]
        lines += [
            f"  fired: {i.fault} on {i.target} at +{i.at_ms - outcome.started_at_ms} ms"
            for i in outcome.injected
        ]
        lines += [f"  {violation}" for violation in self.violations] or ["  no violation"]
        involved = {v.job_id for v in self.violations if v.job_id} | {i.target for i in outcome.injected}
        for job_id in sorted(involved & set(outcome.jobs)):
            lines.append(f"  {job_id} ended {outcome.jobs[job_id].state}; {self._timeline(job_id)}")
        return "\n".join(lines)

    def _timeline(self, job_id: str) -> str:
        runs = [
            f"attempt {p.attempt} at +{p.at_ms - self.outcome.started_at_ms} ms ({p.end})"
            for p in self.outcome.performs_of(job_id)
        ]
        return "performed: " + (", ".join(runs) if runs else "never")
