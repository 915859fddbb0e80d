"""Seeded schedules, exact replays, shrinking to a 1-minimal schedule, and how a failure is reported.

A seed must draw the same schedule every time, and a schedule must replay the same history: that is
what makes the seed printed by a failing test worth printing. Shrinking must stop only when no single
fault can be dropped without the failure going away.
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.core import wire_format
from tsumugi.testing.chaos import (
    FAULT_KINDS,
    Chaos,
    ChaosFailureError,
    ChaosOutcome,
    ChaosReport,
    ChaosSession,
    Fault,
    FaultSchedule,
    find_failure,
    simulate,
)

pytest_plugins = ["tsumugi.testing.chaos.pytest_plugin"]

EVENTS: dict[Any, int] = {"delivery": 3, "perform": 3, "report": 3, "tick": 5}


class Work(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, bool]:
        return {"done": True}


app = define_tsumugi(performers={"Work": Work}, bindings={"Work": {"policy": {"reaper_grace_ms": 1_000}}})


async def two_jobs(sim: ChaosSession) -> None:
    for n in range(2):
        await sim.enqueue(binding="Work", payload={"n": n}, max_attempts=2, timeout_ms=2_000)


def all_completed(outcome: ChaosOutcome) -> None:
    states = {job.id: job.state for job in outcome.jobs.values()}
    assert set(states.values()) == {"COMPLETED"}, states


def history(report: ChaosReport) -> list[Any]:
    outcome = report.outcome
    return [
        [(p.job_id, p.attempt, p.seq, p.at_ms, p.end) for p in outcome.performs],
        [(r.job_id, r.attempt, r.ok, r.seq, r.delivered) for r in outcome.reports],
        [str(injected) for injected in outcome.injected],
        {job.id: (job.state, job.attempts) for job in outcome.jobs.values()},
        outcome.ended_at_ms,
    ]


def test_a_seed_draws_the_same_schedule_every_time_and_seeds_differ() -> None:
    drawn = [FaultSchedule.generate(seed, EVENTS) for seed in range(10)]
    assert drawn == [FaultSchedule.generate(seed, EVENTS) for seed in range(10)]
    assert len({schedule.faults for schedule in drawn}) > 5


def test_a_schedule_keeps_one_fault_per_event_within_twice_the_events_seen() -> None:
    for seed in range(50):
        faults = FaultSchedule.generate(seed, EVENTS, count=6).faults
        assert len({(fault.stream, fault.at) for fault in faults}) == len(faults)
        assert all(1 <= fault.at <= 2 * EVENTS[fault.stream] for fault in faults)


def test_kinds_whose_stream_saw_no_event_are_not_drawn() -> None:
    only_ticks = FaultSchedule.generate(3, {"tick": 4}, count=4)
    assert {fault.kind for fault in only_ticks.faults} == {"restart_mid_tick"}
    assert FaultSchedule.generate(3, EVENTS, kinds=("redeliver",)).faults[0].kind == "redeliver"


def test_the_printed_schedule_parses_back() -> None:
    for seed in range(20):
        schedule = FaultSchedule.generate(seed, EVENTS, kinds=FAULT_KINDS)
        assert FaultSchedule.parse(str(schedule), seed=seed) == schedule
    assert FaultSchedule.parse("clock_jump@1:3600000") == FaultSchedule(
        0, (Fault("clock_jump", 1, 3_600_000),)
    )
    with pytest.raises(ValueError, match="not a fault"):
        FaultSchedule.parse("unplug@1")


async def test_a_schedule_replays_the_same_history() -> None:
    schedule = FaultSchedule.parse(
        "crash_before_report@1, clock_jump@3:95000, lose_report@3, timeout@4", seed=9
    )
    first = await simulate(app, two_jobs, schedule=schedule)
    again = await simulate(app, two_jobs, schedule=schedule)
    assert len(first.outcome.injected) >= 3  # the crash, the jump and more fired
    assert history(first) == history(again)


async def test_the_engines_ids_are_given_back_after_a_simulation() -> None:
    generator = wire_format.new_local_ids
    await simulate(app, two_jobs, schedule=FaultSchedule(0))
    assert wire_format.new_local_ids is generator


async def test_a_shrunk_schedule_fails_and_fails_no_more_without_any_one_of_its_faults() -> None:
    failure = await find_failure(
        app,
        two_jobs,
        seeds=range(10),
        kinds=("lose_report", "redeliver", "timeout"),
        invariants=[all_completed],
    )
    assert failure is not None
    assert failure.minimal.rules() == {"invariant:all_completed"}
    assert set(failure.schedule.faults) <= set(failure.found.schedule.faults)
    assert len(failure.schedule.faults) >= 2  # max_attempts=2: one fault cannot fail a job
    for index in range(len(failure.schedule.faults)):
        without = await simulate(
            app, two_jobs, schedule=failure.schedule.without(index), invariants=[all_completed]
        )
        assert without.ok, str(without)


async def test_a_failure_without_any_fault_is_reported_with_an_empty_schedule(chaos: Chaos) -> None:
    def never(outcome: ChaosOutcome) -> bool:
        return False

    failure = await chaos.find_failure(app, two_jobs, invariants=[never])
    assert failure is not None
    assert failure.schedule.faults == ()
    assert failure.simulations == 1


async def test_check_raises_an_assertion_that_says_how_to_replay(chaos: Chaos) -> None:
    with pytest.raises(ChaosFailureError) as raised:
        await chaos.check(app, two_jobs, seeds=range(10), invariants=[all_completed])
    assert isinstance(raised.value, AssertionError)
    failure = raised.value.failure
    assert f"replay: simulate(app, scenario, schedule=FaultSchedule.parse({str(failure.schedule)!r}" in str(
        raised.value
    )
    replayed = await chaos.simulate(app, two_jobs, schedule=failure.schedule, invariants=[all_completed])
    assert replayed.rules() == failure.minimal.rules()


async def test_a_correct_app_passes_every_seed(chaos: Chaos) -> None:
    await chaos.check(app, two_jobs, seeds=range(10))
