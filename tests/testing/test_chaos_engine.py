"""The engine keeps its guarantees under the simulator's faults, on an app with all it can hold.

At-least-once and at-most-once jobs, a flow that fans out, and a schedule that fires every minute,
each seed with six faults of every kind. No job is lost, no at-most-once job reaches its performer
again without a reported failure, and every job and run ends (J-106..J-119, J-110..J-115, J-161,
F-33). An idempotent side effect per job id stands in for the user's invariant.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.testing.chaos import ChaosOutcome, ChaosSession, find_failure, simulate

SEEDS = range(30)  # about 0.05 s each on a memory-backed directory
MINUTE_MS = 60_000


class Ledger:
    """An outside system that records each job id once, however often it is told."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.entries: set[str] = set()

    def record(self, key: str) -> None:
        self.calls[key] += 1
        self.entries.add(key)


class Work(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, Any]:
        self.env.LEDGER.record(ctx.idempotency_key)
        return {"n": payload.get("n")}


PERFORMERS = {"Work": Work, "Once": Work}
flow = create_flow(PERFORMERS)


@flow
def FAN(f: FlowBuilder) -> None:
    first = f.node("first", "Work", input=lambda i, d: {"n": 0})
    each = f.fan_out(
        "each",
        "Work",
        after={"first": first},
        over=lambda i, d: range(3),
        input=lambda item, i, k: {"n": item},
    )
    f.node("tally", "Work", after={"each": each}, input=lambda i, d: {"n": 9})


app = define_tsumugi(
    performers=PERFORMERS,
    flows={"FAN": FAN},
    bindings={"Once": {"policy": {"reaper_grace_ms": 1_000}}},
    schedules={"tick": {"binding": "Work", "every_ms": MINUTE_MS, "payload": {"n": -1}}},
)


async def everything(sim: ChaosSession) -> None:
    for n in range(3):
        await sim.enqueue(binding="Work", payload={"n": n}, max_attempts=5)
        await sim.enqueue(binding="Once", payload={"n": n}, guarantee="at-most-once", timeout_ms=5_000)
    await sim.start("FAN", {})


def every_completed_job_was_recorded(outcome: ChaosOutcome) -> None:
    ledger = outcome.bindings["LEDGER"]
    missing = [
        job.id for job in outcome.jobs.values() if job.state == "COMPLETED" and job.id not in ledger.entries
    ]
    assert not missing, f"completed without a ledger entry: {missing}"


def ledger() -> dict[str, Any]:
    return {"LEDGER": Ledger()}


async def test_the_engine_keeps_its_guarantees_under_every_kind_of_fault() -> None:
    failure = await find_failure(
        app,
        everything,
        seeds=SEEDS,
        faults=6,
        invariants=[every_completed_job_was_recorded],
        bindings=ledger,
        run_for_ms=3 * MINUTE_MS,
    )
    assert failure is None, str(failure)


async def test_the_app_does_what_it_should_without_faults() -> None:
    # The baseline the faults are measured against: the flow and three minutes of schedule ran.
    report = await simulate(
        app, everything, schedule=None, faults=0, bindings=ledger, run_for_ms=3 * MINUTE_MS
    )
    assert report.ok, str(report)
    states = Counter(job.state for job in report.outcome.jobs.values())
    assert states == {"COMPLETED": len(report.outcome.jobs)}
    assert set(report.outcome.runs.values()) == {"COMPLETED"}
    scheduled = [job for job in report.outcome.jobs.values() if job.run_id is None and job.binding == "Work"]
    assert len(scheduled) >= 3 + 3  # the three enqueued, and one a minute
    assert max(report.outcome.bindings["LEDGER"].calls.values()) == 1
