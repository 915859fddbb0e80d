"""Each fault kind of ``tsumugi.testing.chaos``, alone on one job, does what it says and the engine copes.

One job per guarantee, a 2 s timeout and a 1 s reaper grace, so the reaper acts 3 s after dispatch
(J-111). The table gives what a user observes: how often the performer ran, how the job ended, and how
much simulated time passed. J-106..J-109 (guarantees and the claim), J-112 (reaper decisions), J-74
(timeouts), J-68 (heartbeats), J-118 (a lost report waits for the reaper), J-161 (a job QUEUED whose
message was never written), J-41's neighbour J-111 (a delivery that arrives late finds it reaped).
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.testing.chaos import ChaosSession, FaultSchedule, simulate

TIMEOUT_MS = 2_000
GRACE_MS = 1_000
REAPED_AFTER_MS = TIMEOUT_MS + GRACE_MS  # J-111: dispatched_at + timeout_ms + reaper_grace_ms


class Work(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, bool]:
        return {"done": True}


POLICY = {"policy": {"reaper_grace_ms": GRACE_MS}}
app = define_tsumugi(
    performers={"AtLeast": Work, "AtMost": Work}, bindings={"AtLeast": POLICY, "AtMost": POLICY}
)


def one_job(binding: str, guarantee: str) -> Any:
    async def scenario(sim: ChaosSession) -> None:
        await sim.enqueue(binding=binding, payload={}, guarantee=guarantee, timeout_ms=TIMEOUT_MS)

    return scenario


# (fault, runs of the performer, final state, simulated ms until everything ended)
AT_LEAST_ONCE = [
    ("lose_report@1", 2, "COMPLETED", REAPED_AFTER_MS),  # J-118 then J-112: re-queued, run again
    ("redeliver@1", 2, "COMPLETED", 0),  # no claim: the second delivery runs; its report is ignored
    ("crash_before_perform@1", 1, "COMPLETED", 0),  # redelivered at restart (ADR-0053)
    ("crash_before_report@1", 2, "COMPLETED", 0),
    ("timeout@1", 2, "COMPLETED", None),  # J-74: the timeout is a failure, retried with backoff
    ("heartbeat_stop@1", 2, "COMPLETED", 2 * TIMEOUT_MS),  # the first beat restarts the timer (J-68)
    ("clock_jump@1:15000", 2, "COMPLETED", 15_000),  # reaped while the message was on its way
    ("restart_mid_tick@1:1", 1, "COMPLETED", 0),  # the dispatch rolled back; the start-up tick redoes it
    ("restart_mid_tick@1:8", 1, "COMPLETED", REAPED_AFTER_MS),  # QUEUED, message lost (J-161): reaped
]
AT_MOST_ONCE = [
    ("lose_report@1", 1, "STALLED", REAPED_AFTER_MS),  # J-108: an unknown outcome stalls
    ("redeliver@1", 1, "COMPLETED", 0),  # J-107: the duplicate loses the claim
    ("crash_before_perform@1", 0, "STALLED", REAPED_AFTER_MS),  # claimed, never run, never run again
    ("crash_before_report@1", 1, "STALLED", REAPED_AFTER_MS),
    ("timeout@1", 2, "COMPLETED", None),  # J-109: a reported failure is retried, even at-most-once
    ("heartbeat_stop@1", 2, "COMPLETED", 2 * TIMEOUT_MS),
    ("clock_jump@1:15000", 0, "STALLED", 15_000),  # stalled before the late message could claim it
    ("restart_mid_tick@1:1", 1, "COMPLETED", 0),
    ("restart_mid_tick@1:8", 0, "STALLED", REAPED_AFTER_MS),  # J-161: ends STALLED without having run
]


@pytest.mark.parametrize(
    ("guarantee", "binding", "fault", "runs", "state", "elapsed_ms"),
    [
        *[("at-least-once", "AtLeast", *row) for row in AT_LEAST_ONCE],
        *[("at-most-once", "AtMost", *row) for row in AT_MOST_ONCE],
    ],
)
async def test_one_fault_on_one_job(
    guarantee: str, binding: str, fault: str, runs: int, state: str, elapsed_ms: int | None
) -> None:
    report = await simulate(app, one_job(binding, guarantee), schedule=FaultSchedule.parse(fault))
    assert [str(injected.fault) for injected in report.outcome.injected] == [fault]
    assert report.violations == ()
    [job] = report.outcome.jobs.values()
    assert (len(report.outcome.performs), job.state) == (runs, state)
    elapsed = report.outcome.ended_at_ms - report.outcome.started_at_ms
    if elapsed_ms is None:
        assert TIMEOUT_MS < elapsed < TIMEOUT_MS + 2_000  # the timeout, then a jittered 0.5-1 s backoff
    else:
        assert elapsed == elapsed_ms


async def test_a_timed_out_attempt_is_reported_as_a_timeout_and_its_late_answer_discarded() -> None:
    # J-74: the consumer reports TsumugiTimeoutError at the deadline; the performer's own return
    # comes a millisecond later and is not reported.
    report = await simulate(
        app, one_job("AtLeast", "at-least-once"), schedule=FaultSchedule.parse("timeout@1")
    )
    assert [(r.attempt, r.ok) for r in report.outcome.reports] == [(1, False), (2, True)]
    assert [p.end for p in report.outcome.performs] == ["returned", "returned"]


async def test_a_lost_report_never_reaches_the_shard() -> None:
    report = await simulate(
        app, one_job("AtMost", "at-most-once"), schedule=FaultSchedule.parse("lose_report@1")
    )
    assert [(r.attempt, r.ok, r.delivered) for r in report.outcome.reports] == [(1, True, False)]
