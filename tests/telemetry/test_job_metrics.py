"""Timeouts, stalls and queue lag as the SDK's in-memory reader and exporter see them (ADR-0143)."""

from __future__ import annotations

from opentelemetry.trace import StatusCode
from tests import polling
from tests.telemetry.conftest import DEADLINE_S, SEEN, Local, Otel


async def test_a_timed_out_attempt_ends_its_span_when_the_timeout_fires(otel: Otel, local: Local) -> None:
    # J-74: the performer still runs, but the attempt's span ends with the timeout report
    job_id = await local.app.enqueue(
        local.env, binding="Work", payload={"hold": True}, timeout_ms=1_000, max_attempts=1
    )
    await polling.until(lambda: SEEN, "the attempt to start", DEADLINE_S)
    await local.advance(1_000)
    await local.settled(job_id, "FAILED")
    [attempt] = otel.spans("tsumugi.attempt")
    assert attempt.attributes is not None and attempt.attributes["tsumugi.outcome"] == "timeout"
    assert attempt.status.status_code is StatusCode.ERROR
    [event] = attempt.events
    assert event.attributes is not None
    assert event.attributes["exception.type"] == "tsumugi.errors.TsumugiTimeoutError"
    [point] = otel.points("tsumugi.attempt.duration")
    assert (point.count, point.sum) == (1, 1_000)  # on the engine's clock
    assert dict(point.attributes) == {"tsumugi.binding": "Work", "tsumugi.outcome": "timeout"}
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="FAILED") == 1
    assert otel.total("tsumugi.job.retries") == 0


async def test_a_silent_at_most_once_job_is_counted_as_a_stall(otel: Otel, local: Local) -> None:
    # J-112: the reaper stalls an at-most-once job whose attempt went silent
    job_id = await local.app.enqueue(
        local.env, binding="Work", payload={"hold": True}, guarantee="at-most-once", timeout_ms=0
    )
    await polling.until(lambda: SEEN, "the attempt to start", DEADLINE_S)
    await local.settled(job_id, "RUNNING")
    await local.advance(600_000)  # past the reaper's grace
    await local.settled(job_id, "STALLED")
    assert otel.total("tsumugi.job.stalls", binding="Work") == 1
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="RUNNING") == 1
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="STALLED") == 1
    assert otel.total("tsumugi.job.retries") == 0


async def test_queue_lag_runs_from_run_after_to_the_dispatch(otel: Otel, local: Local) -> None:
    job_id = await local.app.enqueue(local.env, binding="Other", payload={}, delay_ms=5_000)
    await local.advance(7_000)  # the dispatch happens 2 s after the job became due
    await local.settled(job_id, "COMPLETED")
    [lag] = otel.points("tsumugi.job.queue_lag")
    assert (lag.count, lag.sum, dict(lag.attributes)) == (1, 2_000, {"tsumugi.binding": "Other"})
    for state in ("SCHEDULED", "QUEUED", "COMPLETED"):
        assert otel.total("tsumugi.job.state_changes", binding="Other", job_state=state) == 1


async def test_an_operators_retry_is_a_state_change_but_not_a_retry(otel: Otel, local: Local) -> None:
    job_id = await local.app.enqueue(local.env, binding="Work", payload={"fail_until": 5}, max_attempts=1)
    await local.settled(job_id, "FAILED")
    answer = await local.env.JOB_SHARD.get(job_id.rsplit(":", 1)[0]).retry(job_id)  # J-132
    assert answer["ok"] is True
    await polling.until(lambda: len(otel.spans("tsumugi.attempt")) == 2, "the second attempt", DEADLINE_S)
    await local.settled(job_id, "FAILED")
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="SCHEDULED") == 2
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="FAILED") == 2
    assert otel.total("tsumugi.job.retries") == 0


async def test_every_job_of_a_batch_counts_its_completion_and_its_failure(otel: Otel, local: Local) -> None:
    # ADR-0143: reports applied together (one consumer batch) count each job as one applied alone does
    succeeding = await local.app.enqueue_many(
        local.env, [{"binding": "Other", "payload": {}} for _ in range(20)]
    )
    failing = await local.app.enqueue_many(
        local.env, [{"binding": "Other", "payload": {"fail_until": 2}, "maxAttempts": 1} for _ in range(5)]
    )
    for job_id in succeeding:
        await local.settled(job_id, "COMPLETED")
    for job_id in failing:
        await local.settled(job_id, "FAILED")
    assert otel.total("tsumugi.job.state_changes", binding="Other", job_state="COMPLETED") == 20
    assert otel.total("tsumugi.job.state_changes", binding="Other", job_state="FAILED") == 5
