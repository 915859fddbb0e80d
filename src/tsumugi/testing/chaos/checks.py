"""The engine's guarantees, checked against what a simulation saw, and the user's own invariants.

Rules (``Violation.rule``):

* ``lost`` — an enqueue that returned an id whose job never existed, or a job that left its shard
  before it ended (retention only ever sweeps ended jobs).
* ``ran-twice`` — an at-most-once job whose attempt reached the performer although no failure of its
  earlier attempts had been reported (only a reported failure, a raise or a timeout,
  earns an at-most-once job another run).
* ``unsettled`` — a job still waiting or in flight, a run still running, once the simulation stopped
  waiting; or an at-least-once job STALLED, which only at-most-once jobs may be.
* ``completed-unrun`` — a COMPLETED job none of whose attempts returned from the performer.
* ``invariant:<name>`` — a user invariant that raised ``AssertionError`` or returned False.
"""
# J-170, J-106..J-109, J-112, J-71

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable

from tsumugi.core.states import TERMINAL_STATES
from tsumugi.testing.chaos.records import ChaosOutcome, JobRecord, Violation

__all__ = ["Invariant", "check_guarantees", "check_invariants"]

Invariant = Callable[[ChaosOutcome], "bool | Awaitable[bool | None] | None"]
AT_MOST_ONCE = "at-most-once"
RUN_RUNNING = "RUNNING"  # a run's only state that is not an end (F-33)


def check_guarantees(outcome: ChaosOutcome) -> list[Violation]:
    """Every engine guarantee the outcome breaks, in a stable order."""
    violations: list[Violation] = []
    for job_id in outcome.enqueued:
        if job_id not in outcome.jobs:
            violations.append(Violation("lost", f"{job_id} was enqueued but never held by its shard", job_id))
    for job in outcome.jobs.values():
        violations.extend(_job_violations(job, outcome))
    for run_id, state in sorted(outcome.runs.items()):
        if state == RUN_RUNNING:
            violations.append(Violation("unsettled", f"run {run_id} is still RUNNING"))
    return violations


def _job_violations(job: JobRecord, outcome: ChaosOutcome) -> Iterable[Violation]:
    if not job.present and not job.was_terminal:
        yield Violation("lost", f"{job.id} left its shard while {job.state}", job.id)
    if job.present and job.state not in TERMINAL_STATES:
        yield Violation("unsettled", f"{job.id} is still {job.state} after {job.attempts} attempts", job.id)
    if job.guarantee != AT_MOST_ONCE and job.state == "STALLED":
        yield Violation("unsettled", f"at-least-once job {job.id} ended STALLED", job.id)
    performs = outcome.performs_of(job.id)
    if job.state == "COMPLETED" and not any(p.end == "returned" for p in performs):
        yield Violation("completed-unrun", f"{job.id} is COMPLETED but no attempt returned", job.id)
    if job.guarantee == AT_MOST_ONCE:
        yield from _second_runs(job, outcome)


def _second_runs(job: JobRecord, outcome: ChaosOutcome) -> Iterable[Violation]:
    """The k-th run (k >= 1, in start order) needs k failures reported to the shard before it began."""
    failures = sorted(r.seq for r in outcome.reports if r.job_id == job.id and r.delivered and not r.ok)
    for k, run in enumerate(sorted(outcome.performs_of(job.id), key=lambda p: p.seq)):
        reported = sum(1 for seq in failures if seq < run.seq)
        if reported < k:
            detail = (
                f"at-most-once job {job.id} reached its performer {k + 1} times (attempt {run.attempt} "
                f"at {run.at_ms}) with {reported} failure(s) reported before"
            )
            yield Violation("ran-twice", detail, job.id)
            return


async def check_invariants(outcome: ChaosOutcome, invariants: Iterable[Invariant]) -> list[Violation]:
    """Run each invariant; one that raises ``AssertionError`` or returns False is violated."""
    violations: list[Violation] = []
    for invariant in invariants:
        name = getattr(invariant, "__name__", repr(invariant))
        try:
            result: object = invariant(outcome)
            if inspect.isawaitable(result):
                result = await result
        except AssertionError as error:
            # Its first line: the message, or pytest's ``assert ...`` (the rest repeats it, rewritten).
            first = str(error).strip().splitlines()[:1]
            violations.append(Violation(f"invariant:{name}", first[0] if first else "assertion failed"))
            continue
        if result is False:
            violations.append(Violation(f"invariant:{name}", "returned False"))
    return violations
