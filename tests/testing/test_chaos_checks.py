"""The guarantee checks of ``tsumugi.testing.chaos`` on outcomes written by hand.

Each rule must fire on the history that breaks it and stay quiet on its nearest lawful neighbour:
``lost`` (an acknowledged job never held, or gone before it ended, J-170), ``ran-twice`` (J-106..J-109),
``unsettled`` (J-112) and ``completed-unrun`` (J-71); invariants that raise or return False.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tsumugi.testing.chaos import ChaosOutcome, JobRecord, PerformRecord, ReportRecord
from tsumugi.testing.chaos.checks import check_guarantees, check_invariants

JOB = "ONCE#0:c00000000000000000000001"
START = 1_700_000_000_000


def job(state: str, guarantee: str = "at-least-once", **fields: Any) -> JobRecord:
    record = JobRecord(JOB, "ONCE", guarantee, state, attempts=1, run_id=None)
    record.was_terminal = state in ("COMPLETED", "FAILED", "CANCELLED", "STALLED")
    for name, value in fields.items():
        setattr(record, name, value)
    return record


def outcome(
    jobs: Sequence[JobRecord] = (),
    performs: Sequence[PerformRecord] = (),
    reports: Sequence[ReportRecord] = (),
    enqueued: Sequence[str] = (),
    runs: dict[str, str | None] | None = None,
) -> ChaosOutcome:
    return ChaosOutcome(
        jobs={record.id: record for record in jobs},
        runs=runs or {},
        bindings={},
        performs=tuple(performs),
        reports=tuple(reports),
        injected=(),
        enqueued=tuple(enqueued),
        started=(),
        settled=True,
        started_at_ms=START,
        ended_at_ms=START,
    )


def run(attempt: int, seq: int, end: str = "returned") -> PerformRecord:
    return PerformRecord(JOB, attempt, seq, START, end)  # type: ignore[arg-type]


def rules(result: ChaosOutcome) -> list[str]:
    return [violation.rule for violation in check_guarantees(result)]


def test_a_completed_job_that_ran_once_breaks_nothing() -> None:
    assert rules(outcome([job("COMPLETED")], [run(1, 1)], enqueued=[JOB])) == []


def test_an_acknowledged_enqueue_the_shard_never_held_is_lost() -> None:
    assert rules(outcome(enqueued=[JOB])) == ["lost"]


def test_a_job_gone_before_it_ended_is_lost_but_one_swept_after_it_ended_is_not() -> None:
    # J-170: retention sweeps only ended jobs.
    assert rules(outcome([job("SCHEDULED", present=False)])) == ["lost"]
    assert rules(outcome([job("COMPLETED", present=False)], [run(1, 1)])) == []


@pytest.mark.parametrize("state", ["SCHEDULED", "QUEUED", "RUNNING"])
def test_a_job_still_active_is_unsettled(state: str) -> None:
    assert rules(outcome([job(state)])) == ["unsettled"]


def test_only_an_at_most_once_job_may_end_stalled() -> None:
    # J-112: the reaper fails an exhausted at-least-once job; it stalls only at-most-once ones.
    assert rules(outcome([job("STALLED")])) == ["unsettled"]
    assert rules(outcome([job("STALLED", guarantee="at-most-once")], [run(1, 1)])) == []


def test_a_run_still_running_is_unsettled() -> None:
    assert rules(outcome(runs={"FLOW:c1": "RUNNING", "FLOW:c2": "COMPLETED"})) == ["unsettled"]


def test_a_completed_job_none_of_whose_attempts_returned_is_completed_unrun() -> None:
    assert rules(outcome([job("COMPLETED")], [run(1, 1, end="cut")])) == ["completed-unrun"]


def test_an_at_most_once_job_run_twice_with_no_failure_reported_ran_twice() -> None:
    # J-107: a duplicate delivery must lose the claim; J-108: a lost outcome stalls the job.
    once = job("COMPLETED", guarantee="at-most-once")
    lost = ReportRecord(JOB, 1, False, 2, delivered=False)
    assert rules(outcome([once], [run(1, 1), run(2, 3)], [lost])) == ["ran-twice"]
    assert rules(outcome([once], [run(1, 1), run(1, 2)])) == ["ran-twice"]


def test_an_at_most_once_job_may_run_again_after_a_reported_failure() -> None:
    # J-109: a raise (or a timeout, J-74) reported to the shard is retried like any failure.
    once = job("COMPLETED", guarantee="at-most-once")
    failed = ReportRecord(JOB, 1, False, 2, delivered=True)
    assert rules(outcome([once], [run(1, 1, end="raised"), run(2, 3)], [failed])) == []
    late = ReportRecord(JOB, 1, False, 4, delivered=True)  # reported only after the second run began
    assert rules(outcome([once], [run(1, 1, end="raised"), run(2, 3)], [late])) == ["ran-twice"]


async def test_an_invariant_is_broken_by_an_assertion_or_by_returning_false() -> None:
    def holds(outcome: ChaosOutcome) -> None:
        assert outcome.jobs == {}

    def asserts(outcome: ChaosOutcome) -> None:
        raise AssertionError("charged twice")

    async def refuses(outcome: ChaosOutcome) -> bool:
        return False

    violations = await check_invariants(outcome(), [holds, asserts, refuses])
    assert [(v.rule, v.detail) for v in violations] == [
        ("invariant:asserts", "charged twice"),
        ("invariant:refuses", "returned False"),
    ]
