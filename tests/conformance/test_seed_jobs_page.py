"""Conformance with the seed page "Controlling Execution" (seeds/000_*.txt), through the public API only.

Each test quotes the seed statement it proves and cites the matching rule id of jobs.md / api.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import (
    BindingConfig,
    ExponentialBackoff,
    FixedBackoff,
    InvalidJobIdError,
    JobState,
    Policy,
    Rate,
    SweepOptions,
    TsumugiError,
    TsumugiTimeoutError,
    create_client,
    create_flow,
    define_tsumugi,
    parse_job_id,
    shard_for,
)
from tsumugi.testing import next_attempt

from .conftest import PERFORMERS, START, MakeLocal, path_id

MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS
GRACE_MS = 30_000


# ---------------------------------------------------------------------------------------------- States
def test_the_seven_states() -> None:
    # seed "States" table; J-80: exactly these seven state strings
    assert [state.value for state in JobState] == [
        "SCHEDULED",
        "QUEUED",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "STALLED",
    ]


async def test_attempts_counts_finished_attempts(local: MakeLocal) -> None:
    # seed "attempts is the number of finished attempts. A SCHEDULED job with attempts of 0 is waiting for its
    # first run, and one with attempts of 1 or more is waiting for a retry." (J-101)
    app = await local()
    waiting = await app.enqueue(delay_ms=MINUTE_MS)
    retrying = await app.enqueue(payload={"fail": "once"}, max_attempts=3, backoff=FixedBackoff(MINUTE_MS))
    async with app.rest() as client:
        first = await app.detail(client, waiting, "SCHEDULED")
        assert first["attempts"] == 0
        assert (await app.detail(client, retrying, "SCHEDULED"))["attempts"] == 1
    assert [s.attempt for s in app.record.of("MAIL")] == [1]


async def test_failed_job_is_retried_manually_over_rest(local: MakeLocal) -> None:
    # seed "FAILED | Failed up to the attempt limit. A manual retry moves it to SCHEDULED" (J-132, A-44)
    app = await local()
    job_id = await app.enqueue(payload={"fail": "boom"}, max_attempts=1, delay_ms=MINUTE_MS)
    await app.advance(MINUTE_MS)
    await app.settled(job_id, "FAILED")
    async with app.rest() as client:
        answer = await client.post(f"/api/jobs/{path_id(job_id)}/retry")
        assert (answer.status_code, answer.json()) == (200, {"ok": True})
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "the manual retry to run")
    await app.settled(job_id, "FAILED")


async def test_stalled_at_most_once_job_is_retried_only_manually(local: MakeLocal) -> None:
    # seed "STALLED | Stopped without a reported result. Only a manual retry moves it to SCHEDULED" and
    # "at-most-once | Moves to STALLED without being re-enqueued" (J-112)
    app = await local(silent_consumer=True)
    job_id = await app.enqueue(
        binding="CHARGE", payload={"gate": "never"}, guarantee="at-most-once", timeout_ms=1_000
    )
    await app.until(lambda: len(app.record.of("CHARGE")) == 1, "the attempt to start")
    await app.advance(1_000 + GRACE_MS)
    await app.settled(job_id, "STALLED")
    await app.advance(10 * MINUTE_MS)
    assert len(app.record.of("CHARGE")) == 1  # "An at-most-once job is never executed twice."
    assert await app.shard("CHARGE").retry(job_id) == {"ok": True}
    await app.until(lambda: len(app.record.of("CHARGE")) == 2, "the manual retry to run")


# ------------------------------------------------------------------------------------------ Transitions
async def test_cancelling_a_scheduled_job_is_immediate(local: MakeLocal) -> None:
    # seed "Cancelling a SCHEDULED job moves it to CANCELLED immediately." (J-135, A-45)
    app = await local()
    job_id = await app.enqueue(delay_ms=MINUTE_MS)
    async with app.rest() as client:
        answer = await client.post(f"/api/jobs/{path_id(job_id)}/cancel")
    assert (answer.status_code, answer.json()) == (200, {"ok": True})
    assert await app.state(job_id) == "CANCELLED"
    await app.advance(MINUTE_MS)
    assert app.record.of("MAIL") == []


async def test_a_queued_job_past_its_expiry_is_cancelled_without_running(local: MakeLocal) -> None:
    # seed "A QUEUED or RUNNING job moves to CANCELLED when its deadline passes" (J-41: expires_at)
    app = await local(runtime={"batch_size": 1, "max_concurrency": 1})
    blocker = await app.enqueue(payload={"gate": "hold"}, timeout_ms=60 * MINUTE_MS)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the blocker to start")
    expiring = await app.enqueue(payload={"n": "expiring"}, expires_in_ms=1_000)

    async def queued() -> bool:
        return await app.state(expiring) == "QUEUED"

    await app.until(queued, "the expiring job to be dispatched")
    await app.advance(1_000)
    app.open("hold")
    await app.settled(blocker, "COMPLETED")
    await app.settled(expiring, "CANCELLED")
    assert [s.job_id for s in app.record.of("MAIL")] == [blocker]


# ---------------------------------------------------------------------------------------------- Retries
@pytest.mark.parametrize("max_attempts", [0, -1, 1.5, "3"])
async def test_max_attempts_must_be_an_integer_of_one_or_more(local: MakeLocal, max_attempts: Any) -> None:
    # seed "Specify an integer of 1 or more for maxAttempts." (J-31, J-52)
    app = await local()
    with pytest.raises(TsumugiError):
        await app.enqueue(max_attempts=max_attempts)
    async with app.rest() as client:
        answer = await client.post("/api/jobs", json={"binding": "MAIL", "payload": {}, "maxAttempts": 0})
    assert (answer.status_code, answer.json()) == (400, {"error": "maxAttempts must be at least 1"})


def test_default_backoff_is_exponential_1s_x2_capped_at_an_hour_with_jitter() -> None:
    # seed "{ kind: 'exponential', baseMs: 1_000, factor: 2, maxMs: 3_600_000, jitter: true }" (J-102)
    assert ExponentialBackoff() == ExponentialBackoff(base_ms=1_000, factor=2, max_ms=3_600_000, jitter=True)
    no_jitter = {"kind": "exponential", "baseMs": 1_000, "factor": 2, "maxMs": 3_600_000, "jitter": False}
    delays = [next_attempt(n, 30, no_jitter, START).run_after - START for n in (1, 2, 3, 13)]
    assert delays == [1_000, 2_000, 4_000, 3_600_000]


async def test_default_backoff_retries_within_the_first_second(local: MakeLocal) -> None:
    # seed "The default is the following exponential backoff" (J-102): first retry after 0.5..1 s with jitter
    app = await local()
    job_id = await app.enqueue(payload={"fail": "once"}, max_attempts=2)
    await app.waiting_for_retry(job_id)
    await app.advance(499)
    assert len(app.record.of("MAIL")) == 1
    await app.advance(501)
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "the retry after at most one second")


async def test_fixed_backoff_waits_the_fixed_interval(local: MakeLocal) -> None:
    # seed "backoff: { kind: 'fixed', delayMs: 30_000, jitter: true }" -> FixedBackoff (J-102)
    app = await local()
    job_id = await app.enqueue(payload={"fail": "x"}, max_attempts=2, backoff=FixedBackoff(30_000))
    await app.waiting_for_retry(job_id)
    await app.advance(29_999)
    assert len(app.record.of("MAIL")) == 1
    await app.advance(1)
    await app.settled(job_id, "FAILED")
    assert [s.attempt for s in app.record.of("MAIL")] == [1, 2]
    jittered = await app.enqueue(backoff=FixedBackoff(delay_ms=30_000, jitter=True))  # the seed's example
    await app.settled(jittered, "COMPLETED")


def test_jitter_spreads_retries_of_jobs_that_failed_together() -> None:
    # seed "With jitter: true, the retry times of many jobs that failed at the same moment are spread out."
    fixed = {"kind": "fixed", "delayMs": 30_000, "jitter": True}
    times = {next_attempt(1, 5, fixed, START, rand=r / 10).run_after for r in range(10)}
    assert len(times) > 1
    assert all(START < t <= START + 30_000 for t in times)


# --------------------------------------------------------------------------------- Execution guarantees
async def test_guarantee_defaults_to_at_least_once(local: MakeLocal) -> None:
    # seed "guarantee is either at-least-once (default) or at-most-once." (J-104)
    app = await local()
    plain = await app.enqueue(delay_ms=MINUTE_MS)
    charge = await app.enqueue(binding="CHARGE", guarantee="at-most-once", delay_ms=MINUTE_MS)
    async with app.rest() as client:
        assert (await app.detail(client, plain, "SCHEDULED"))["guarantee"] == "at-least-once"
        assert (await app.detail(client, charge, "SCHEDULED"))["guarantee"] == "at-most-once"
    with pytest.raises(TsumugiError):
        await app.enqueue(guarantee="exactly-once")


async def test_at_least_once_unreported_attempt_is_re_enqueued_then_fails(local: MakeLocal) -> None:
    # seed "at-least-once (default) | Re-enqueued as SCHEDULED" and "An at-least-once job is re-enqueued if
    # the number of attempts has not reached the limit, and moves to FAILED if it has." (J-111, J-112;
    # README decision 1: a reaped attempt counts, so the job is dispatched max_attempts times in all)
    app = await local(silent_consumer=True)
    job_id = await app.enqueue(payload={"gate": "never"}, timeout_ms=1_000, max_attempts=2)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the first attempt")
    await app.advance(1_000 + GRACE_MS - 1)
    assert await app.state(job_id) in ("QUEUED", "RUNNING")  # not before timeout + reaperGraceMs
    await app.advance(1)
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "the re-enqueued attempt")
    await app.advance(1_000 + GRACE_MS)
    await app.settled(job_id, "FAILED")
    assert [s.attempt for s in app.record.of("MAIL")] == [1, 2]


# -------------------------------------------------------------------------------------------- Timeouts
def test_timeout_error_text() -> None:
    # seed "TsumugiTimeoutError (job timed out (<jobId>, <timeoutMs>ms))" (J-74)
    assert str(TsumugiTimeoutError("MAIL#0:abc", 1_000)) == "job timed out (MAIL#0:abc, 1000ms)"


async def test_an_attempt_over_its_timeout_fails_and_the_performer_keeps_running(local: MakeLocal) -> None:
    # seed "An attempt that exceeds timeoutMs is treated as failed. A TsumugiTimeoutError (...) is recorded as
    # the attempt's error. The performer is not stopped after the timeout." (J-74)
    app = await local()
    job_id = await app.enqueue(payload={"gate": "slow", "result": "late"}, timeout_ms=1_000, max_attempts=1)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the attempt to start")
    await app.advance(1_000)
    await app.settled(job_id, "FAILED")
    assert app.record.running["MAIL/None"] == 1  # still running after the timeout
    app.open("slow")
    await app.until(lambda: app.record.running["MAIL/None"] == 0, "the performer to return")
    async with app.rest() as client:
        detail = await app.detail(client, job_id, "FAILED")
    assert detail["result"] is None
    error = detail["attempts_log"][0]["error"]
    assert "TsumugiTimeoutError" in error and f"job timed out ({job_id}, 1000ms)" in error


async def test_heartbeats_keep_a_long_attempt_alive(local: MakeLocal) -> None:
    # seed "judged unresponsive when no attempt result is recorded within timeoutMs plus reaperGraceMs ...
    # from the start of execution (or from the last heartbeat)." (J-68, J-111)
    app = await local()
    job_id = await app.enqueue(payload={"watch": "w", "result": "done"}, timeout_ms=10_000, max_attempts=1)
    await app.until(lambda: app.record.beats > 0, "the first heartbeat")
    for _ in range(12):  # 60 s in all: beyond timeoutMs + reaperGraceMs, but never 10 s without a heartbeat
        await app.advance(5_000)
        await app.until(
            lambda before=app.record.beats: app.record.beats >= before + 2, "a heartbeat at the new time"
        )
    assert await app.state(job_id) in ("QUEUED", "RUNNING")
    app.open("w")
    await app.settled(job_id, "COMPLETED")
    assert len(app.record.of("MAIL")) == 1


# --------------------------------------------------------------------------------- Cancelling a running job
async def test_cancel_of_a_running_job_records_a_request_the_performer_sees(local: MakeLocal) -> None:
    # seed "When you cancel a QUEUED or RUNNING job, a cancellation request to the performer is recorded."
    # "The response from this endpoint includes requested: true." "An attempt that fails after the request is
    # not retried, and the job moves to CANCELLED." (J-135, J-69a)
    app = await local()
    job_id = await app.enqueue(payload={"watch": "w"}, max_attempts=3)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the attempt to start")
    async with app.rest() as client:
        answer = await client.post(f"/api/jobs/{path_id(job_id)}/cancel")
        assert answer.status_code == 200
        assert answer.json()["requested"] is True
        assert answer.json()["ok"] is True
        # seed "If you request reschedule for a job that already has a cancellation request, ... 409."
        again = await client.post(f"/api/jobs/{path_id(job_id)}/reschedule", json={"delayMs": 1_000})
        assert again.status_code == 409
    await app.advance(5_000)  # past the heartbeat throttle, so the next heartbeat reaches the shard
    await app.settled(job_id, "CANCELLED")
    assert app.record.cancel_seen == [job_id]
    await app.advance(MINUTE_MS)
    assert len(app.record.of("MAIL")) == 1  # not retried


async def test_a_success_after_the_request_keeps_completed_with_its_result(local: MakeLocal) -> None:
    # seed "If a success is reported before the request, the job stays COMPLETED and its result is also
    # saved." (J-135)
    app = await local()
    job_id = await app.enqueue(payload={"result": {"n": 1}})
    await app.settled(job_id, "COMPLETED")
    async with app.rest() as client:
        answer = await client.post(f"/api/jobs/{path_id(job_id)}/cancel")
        assert answer.status_code == 409
        detail = await app.detail(client, job_id, "COMPLETED")
    assert detail["result"] == '{"n":1}'


async def test_no_report_within_grace_after_the_request_cancels_and_late_reports_are_dropped(
    local: MakeLocal,
) -> None:
    # seed "If no result is reported within reaperGraceMs (default 30 seconds) of the request, the job moves
    # to CANCELLED. The performer is not stopped ... Reports received after the job moves to CANCELLED are
    # discarded." (J-135, J-115)
    app = await local()
    job_id = await app.enqueue(payload={"gate": "ignore", "result": "late"}, timeout_ms=10 * MINUTE_MS)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the attempt to start")
    assert (await app.shard().cancel(job_id))["requested"] is True
    await app.advance(GRACE_MS - 1)
    assert await app.state(job_id) in ("QUEUED", "RUNNING")
    await app.advance(1)
    await app.settled(job_id, "CANCELLED")
    assert app.record.running["MAIL/None"] == 1  # the performer was not stopped
    app.open("ignore")
    await app.until(lambda: app.record.running["MAIL/None"] == 0, "the performer to return")
    async with app.rest() as client:
        detail = await app.detail(client, job_id, "CANCELLED")
    assert detail["result"] is None


async def test_a_job_waiting_for_retry_is_cancelled_without_re_enqueue(local: MakeLocal) -> None:
    # seed "A job waiting for a retry moves to CANCELLED without being re-enqueued." (J-135)
    app = await local()
    job_id = await app.enqueue(payload={"fail": "x"}, max_attempts=3, backoff=FixedBackoff(MINUTE_MS))
    await app.waiting_for_retry(job_id)
    assert await app.shard().cancel(job_id) == {"ok": True}
    assert await app.state(job_id) == "CANCELLED"
    await app.advance(2 * MINUTE_MS)
    assert len(app.record.of("MAIL")) == 1


async def test_an_at_most_once_job_not_yet_run_is_cancelled_without_running(local: MakeLocal) -> None:
    # seed "An at-most-once job that has not yet run also moves to CANCELLED without being executed." (J-135)
    app = await local()
    job_id = await app.enqueue(binding="CHARGE", guarantee="at-most-once", delay_ms=MINUTE_MS)
    assert (await app.shard("CHARGE").cancel(job_id))["ok"] is True
    await app.advance(MINUTE_MS)
    assert await app.state(job_id) == "CANCELLED"
    assert app.record.of("CHARGE") == []


async def test_a_queued_at_most_once_job_is_cancelled_before_it_runs(local: MakeLocal) -> None:
    # seed "An at-most-once job that has not yet run also moves to CANCELLED without being executed." (J-135)
    app = await local(runtime={"batch_size": 1, "max_concurrency": 1})
    blocker = await app.enqueue(payload={"gate": "hold"}, timeout_ms=60 * MINUTE_MS)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the blocker to start")
    charge = await app.enqueue(binding="CHARGE", guarantee="at-most-once")

    async def queued() -> bool:
        return await app.state(charge) == "QUEUED"

    await app.until(queued, "the at-most-once job to be dispatched")
    assert (await app.shard("CHARGE").cancel(charge))["ok"] is True
    assert await app.state(charge) == "CANCELLED"
    app.open("hold")
    await app.settled(blocker, "COMPLETED")
    await app.advance(MINUTE_MS)
    assert app.record.of("CHARGE") == []


# ------------------------------------------------------------------------------ Limiting execution volume
def test_policy_defaults() -> None:
    # seed table: concurrency 100, rate null, perKeyConcurrency 1, perKeyRate null (J-147)
    policy = Policy()
    assert (policy.concurrency, policy.rate, policy.per_key_concurrency, policy.per_key_rate) == (
        100,
        None,
        1,
        None,
    )


def test_the_seed_policy_example_is_accepted() -> None:
    # seed "policy: { concurrency: 20, rate: { tokens: 100, intervalMs: 60_000 }, perKeyConcurrency: 1, ...}"
    policy = {
        "concurrency": 20,
        "rate": Rate(tokens=100, interval_ms=60_000),
        "per_key_concurrency": 1,
        "per_key_rate": {"tokens": 10, "interval_ms": 60_000},
    }
    app = define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"policy": policy}})
    config = app.binding_config("MAIL")
    assert config.policy is not None and config.policy.concurrency == 20
    assert config.policy.rate == Rate(100, 60_000) and config.policy.per_key_rate == Rate(10, 60_000)


def gated(count: int, gate: str, key: str | None = None) -> list[dict[str, Any]]:
    options: dict[str, Any] = {} if key is None else {"concurrency_key": key}
    return [
        {"binding": "MAIL", "payload": {"gate": gate, "key": key, "n": n}, **options} for n in range(count)
    ]


async def test_concurrency_limits_jobs_running_at_once(local: MakeLocal) -> None:
    # seed "concurrency | 100 | Upper limit on the number of jobs running at the same time" (J-143)
    app = await local(bindings={"MAIL": {"policy": {"concurrency": 2}}})
    await app.app.enqueue_many(app.env, gated(4, "g"))
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "two attempts")
    async with app.rest() as client:
        # seed "check the response of GET /api/diagnostics to see which setting is limiting execution"
        diagnostics = (await client.get("/api/diagnostics")).json()
    assert diagnostics["bindings"]["MAIL"]["blocked"]["capacity"] is True
    app.open("g")
    await app.until(lambda: len(app.record.of("MAIL")) == 4, "every job")
    assert app.record.peak["MAIL/None"] == 2


async def test_binding_limits_apply_to_jobs_enqueued_by_runs(local: MakeLocal) -> None:
    # seed "Four settings limit execution volume for each binding." - also for the jobs of flow nodes, on a
    # shard no client enqueue has reached yet (J-50)
    flow = create_flow(PERFORMERS)
    wide = flow(
        lambda f: f.fan_out(
            "each", "MAIL", over=lambda i, d: [1, 2, 3], input=lambda n: {"gate": "g", "n": n}
        )
    )
    app = await local(flows={"WIDE": wide}, bindings={"MAIL": {"policy": {"concurrency": 1}}})
    run_id = await app.app.start(app.env, "WIDE", {})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "one child to run")

    async def capacity_blocked() -> bool:
        return bool((await app.shard().diagnostics())["blocked"]["capacity"])

    await app.until(capacity_blocked, "the binding's concurrency to hold the other children")
    app.open("g")
    await app.run_settled(run_id, "COMPLETED")
    assert app.record.peak["MAIL/None"] == 1


async def test_per_key_concurrency_defaults_to_one_and_skips_null_keys(local: MakeLocal) -> None:
    # seed "perKeyConcurrency | 1" and "perKeyConcurrency and perKeyRate do not apply to jobs whose
    # concurrencyKey is null." (J-143)
    app = await local()
    await app.app.enqueue_many(app.env, [*gated(3, "g", key="k"), *gated(3, "g")])
    await app.until(lambda: len(app.record.of("MAIL")) == 4, "one keyed and three null-key attempts")
    assert app.record.running["MAIL/k"] == 1 and app.record.running["MAIL/None"] == 3
    app.open("g")
    await app.until(lambda: len(app.record.of("MAIL")) == 6, "every job")
    assert app.record.peak["MAIL/k"] == 1


async def test_rate_limits_runs_per_interval_and_is_diagnosed(local: MakeLocal) -> None:
    # seed "rate | null | Upper limit on the number of jobs run per unit of time" and "The response shows
    # whether the cause is a pause, the concurrency limit, or the rate limit." (J-148, A-55)
    app = await local(bindings={"MAIL": {"policy": {"rate": {"tokens": 2, "interval_ms": MINUTE_MS}}}})
    ids = await app.app.enqueue_many(app.env, [{"binding": "MAIL", "payload": {"n": n}} for n in range(3)])
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "two runs")
    [waiting] = set(ids) - {s.job_id for s in app.record.of("MAIL")}
    async with app.rest() as client:
        blocked = (await client.get("/api/diagnostics")).json()["bindings"]["MAIL"]["blocked"]
    assert blocked["tokens"] is True and blocked["capacity"] is False
    assert await app.state(waiting) == "SCHEDULED"
    await app.advance(MINUTE_MS // 2)
    await app.settled(waiting, "COMPLETED")


async def test_per_key_rate_applies_the_same_value_to_every_key(local: MakeLocal) -> None:
    # seed "perKeyRate applies the same value to every key." (J-149a)
    policy = {"per_key_concurrency": 10, "per_key_rate": {"tokens": 1, "interval_ms": MINUTE_MS}}
    app = await local(bindings={"MAIL": {"policy": policy}})
    items = [
        {"binding": "MAIL", "payload": {"k": k, "n": n}, "concurrency_key": k} for k in "ab" for n in (1, 2)
    ]
    # "perKeyConcurrency and perKeyRate do not apply to jobs whose concurrencyKey is null."
    items += [{"binding": "MAIL", "payload": {"k": None, "n": n}} for n in (1, 2, 3)]
    await app.app.enqueue_many(app.env, items)
    await app.until(lambda: len(app.record.of("MAIL")) == 5, "one run per key and every null-key job")
    assert sorted(str(s.payload["k"]) for s in app.record.of("MAIL")) == ["None", "None", "None", "a", "b"]
    await app.advance(MINUTE_MS)
    await app.until(lambda: len(app.record.of("MAIL")) == 7, "the second run of each key")


# ---------------------------------------------------------------------------- Changing settings at runtime
async def test_pause_over_rest_stops_dispatch_until_resumed(local: MakeLocal) -> None:
    # seed "curl -X POST ... -d '{"paused": true}' https://example.com/api/bindings/MAIL/policy" (J-176,
    # J-149b)
    app = await local()
    async with app.rest() as client:
        answer = await client.post("/api/bindings/MAIL/policy", json={"paused": True})
        assert answer.status_code == 200 and answer.json()["ok"] is True
        job_id = await app.enqueue()
        await app.advance(1_000)
        blocked = (await client.get("/api/diagnostics")).json()["bindings"]["MAIL"]["blocked"]
        assert blocked["paused"] is True  # "whether the cause is a pause"
        assert await app.state(job_id) == "SCHEDULED" and app.record.of("MAIL") == []
        assert (await client.post("/api/bindings/MAIL/policy", json={"paused": False})).status_code == 200
    await app.settled(job_id, "COMPLETED")


async def test_configure_takes_precedence_until_reset_over_rest(local: MakeLocal) -> None:
    # seed "await tsumugi.shardFor(env, 'MAIL').configure({ policy: { concurrency: 5 } });" "Settings changed
    # at runtime take precedence over the bindings settings." "To return to the bindings settings, call POST
    # /api/bindings/:binding/policy/reset." (J-175, J-176)
    app = await local(bindings={"MAIL": {"policy": {"concurrency": 3}}})
    await app.shard("MAIL").configure({"policy": {"concurrency": 1}})
    await app.app.enqueue_many(app.env, gated(4, "g"))
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "one attempt")
    await app.enqueue(payload={"n": "late"}, delay_ms=1)  # a later enqueue must not restore the static policy
    await app.advance(1)
    assert (await app.shard("MAIL").diagnostics())["policy"]["concurrency"] == 1
    async with app.rest() as client:
        assert (await client.post("/api/bindings/MAIL/policy/reset")).status_code == 200
    await app.until(lambda: len(app.record.of("MAIL")) == 3, "the bindings concurrency again")
    app.open("g")
    await app.until(lambda: len(app.record.of("MAIL")) == 5, "every job")


async def test_configure_changes_retention_periods(local: MakeLocal) -> None:
    # seed "configure changes the execution limits with policy, and the retention periods with sweepAfterMs
    # and failedRetentionMs." (J-175)
    app = await local()
    await app.shard("MAIL").configure(sweep_after_ms=1_000, failed_retention_ms=2_000)
    done = await app.enqueue()
    await app.settled(done, "COMPLETED")
    await app.advance(1_000)
    await app.advance(1_000)  # the sweep wakes at most once a second (J-170)
    await app.settled(done, None)


# -------------------------------------------------------------------------------------------------- Aging
def test_aging_is_on_by_default_every_60_seconds_and_can_be_turned_off() -> None:
    # seed "agingIntervalMs sets the interval at which priority rises, and its default is 60 seconds. If you
    # specify null, aging is not applied" (J-150a)
    assert Policy().aging_interval_ms == 60_000
    assert Policy(aging_interval_ms=None).aging_interval_ms is None


@pytest.mark.parametrize(("aging_interval_ms", "first"), [(60_000, "old"), (None, "new")])
async def test_aging_lets_a_long_waiting_low_priority_job_run_first(
    local: MakeLocal, aging_interval_ms: int | None, first: str
) -> None:
    # seed "the effective priority rises with waiting time" / "null ... jobs run strictly in priority order"
    policy = {"concurrency": 1, "aging_interval_ms": aging_interval_ms}
    app = await local(bindings={"MAIL": {"policy": policy}})
    blocker = await app.enqueue(payload={"gate": "b", "n": "blocker"}, timeout_ms=60 * MINUTE_MS)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the blocker")
    await app.enqueue(payload={"n": "old"}, priority=0)
    await app.advance(10 * MINUTE_MS)  # the old job gained +10
    await app.enqueue(payload={"n": "new"}, priority=5)
    app.open("b")
    await app.settled(blocker, "COMPLETED")
    await app.until(lambda: len(app.record.of("MAIL")) == 3, "both waiting jobs")
    assert [s.payload["n"] for s in app.record.of("MAIL")][1] == first


# -------------------------------------------------------------------------------------------------- Shards
def test_shards_default_to_one() -> None:
    # seed "The default number of shards is 1."
    assert BindingConfig().shards == 1


async def test_partition_key_is_required_with_two_or_more_shards(local: MakeLocal) -> None:
    # seed "If the number of shards is 2 or more, partitionKey is required, and omitting it raises an
    # exception." (J-203)
    app = await local(bindings={"MAIL": {"shards": 4}})
    with pytest.raises(InvalidJobIdError, match="requires partitionKey"):
        await app.enqueue()
    job_id = await app.enqueue(partition_key="user-1")
    assert parse_job_id(job_id).shard in range(4)
    await app.settled(job_id, "COMPLETED")


# --------------------------------------------------------------------------------------- Retention periods
def test_retention_defaults() -> None:
    # seed "COMPLETED / CANCELLED | sweepAfterMs | 5 minutes" "FAILED / STALLED | failedRetentionMs | 7 days"
    # and "By default, the two periods match." (J-170, J-172)
    app = define_tsumugi(performers=PERFORMERS)
    wire = app.static_settings("MAIL")
    assert (wire.get("sweepAfterMs", 5 * MINUTE_MS), wire.get("failedRetentionMs", 7 * DAY_MS)) == (
        5 * MINUTE_MS,
        7 * DAY_MS,
    )
    assert SweepOptions().older_than_ms == 7 * DAY_MS


async def test_finished_jobs_are_deleted_after_their_period_and_cannot_be_retried(local: MakeLocal) -> None:
    # seed "Finished jobs are deleted after a certain period." "A deleted job cannot be retried." (J-170,
    #
    app = await local()
    done = await app.enqueue()
    failed = await app.enqueue(payload={"fail": "x"}, max_attempts=1)
    await app.settled(done, "COMPLETED")
    await app.settled(failed, "FAILED")
    await app.advance(5 * MINUTE_MS - 1)
    assert await app.state(done) == "COMPLETED"
    await app.advance(1_001)  # strictly older than the period; the sweep wakes at most once a second (J-170)
    await app.settled(done, None)
    await app.advance(7 * DAY_MS - 5 * MINUTE_MS - 1_001)
    assert await app.state(failed) == "FAILED"
    await app.advance(1_001)
    await app.settled(failed, None)
    async with app.rest() as client:
        answer = await client.post(f"/api/jobs/{path_id(failed)}/retry")
    assert answer.status_code == 410


async def test_per_binding_retention_from_the_seed_example(local: MakeLocal) -> None:
    # seed "MAIL: { sweepAfterMs: 60 * 60 * 1000, failedRetentionMs: 14 * 24 * 60 * 60 * 1000 }"
    app = await local(
        bindings={"MAIL": {"sweep_after_ms": 60 * MINUTE_MS, "failed_retention_ms": 14 * DAY_MS}}
    )
    done = await app.enqueue()
    await app.settled(done, "COMPLETED")
    await app.advance(59 * MINUTE_MS)
    assert await app.state(done) == "COMPLETED"
    await app.advance(MINUTE_MS)
    await app.advance(1_001)
    await app.settled(done, None)


# ------------------------------------------------------------------------------------ Failure notifications
FAILURE_NOTICE_FIELDS = {
    "jobId",
    "binding",
    "state",
    "attempts",
    "maxAttempts",
    "error",
    "runId",
    "nodeId",
    "failedAt",
}


async def test_failure_notice_fields_for_failed_and_stalled(local: MakeLocal) -> None:
    # seed "FAILED and STALLED jobs are notified to the specified performer" + the FailureNotice table (J-180)
    app = await local(on_failure="ALERT", silent_consumer=True)
    failed = await app.enqueue(payload={"fail": "boom"}, max_attempts=1)
    stalled = await app.enqueue(
        binding="CHARGE", payload={"gate": "never"}, guarantee="at-most-once", timeout_ms=1_000
    )
    await app.settled(failed, "FAILED")
    await app.until(lambda: len(app.record.of("CHARGE")) == 1, "the at-most-once attempt")
    await app.advance(1_000 + GRACE_MS)
    await app.until(lambda: len(app.record.of("ALERT")) == 2, "two failure notices")
    notices = {s.payload["jobId"]: s.payload for s in app.record.of("ALERT")}
    assert all(set(n) == FAILURE_NOTICE_FIELDS for n in notices.values())
    first = notices[failed]
    assert (first["binding"], first["state"], first["attempts"], first["maxAttempts"]) == (
        "MAIL",
        "FAILED",
        1,
        1,
    )
    assert "boom" in first["error"] and first["failedAt"] == START
    assert (first["runId"], first["nodeId"]) == (None, None)
    second = notices[stalled]
    assert (second["binding"], second["state"], second["failedAt"]) == (
        "CHARGE",
        "STALLED",
        START + 1_000 + GRACE_MS,
    )
    assert (second["attempts"], second["error"]) == (1, None)  # "null if none was recorded"


async def test_a_failing_notification_job_is_retried_listed_and_not_notified_again(local: MakeLocal) -> None:
    # seed "Each notification runs as one job. If a notification job fails, that job appears in the list. A
    # notification job is also retried like any other job. Failures of jobs in the destination binding itself
    # are not notified." (J-180)
    app = await local(on_failure="BROKEN")
    await app.enqueue(payload={"fail": "x"}, max_attempts=1)
    await app.until(lambda: len(app.record.of("BROKEN")) == 1, "the first notice attempt")
    notice_id = app.record.of("BROKEN")[0].job_id
    for _ in range(2):  # default max_attempts 3, default exponential backoff (at most 1 s, then 2 s)
        await app.waiting_for_retry(notice_id)
        await app.advance(2_000)
    await app.settled(notice_id, "FAILED")
    assert [s.attempt for s in app.record.of("BROKEN")] == [1, 2, 3]
    async with app.rest() as client:
        await app.detail(client, notice_id, "FAILED")
        listed = (await client.get("/api/jobs", params={"binding": "BROKEN"})).json()
    assert [job["id"] for job in listed["jobs"]] == [notice_id]
    assert listed["jobs"][0]["state"] == "FAILED"
    await app.advance(MINUTE_MS)
    assert len(app.record.of("BROKEN")) == 3  # its own failure was not notified


async def test_a_result_too_large_to_store_completes_with_a_null_result(local: MakeLocal) -> None:
    # seed SettledNotice "result | Return value of perform. null ... if the storage limit was exceeded" (J-71)
    app = await local(on_settled={"binding": "AUDIT", "states": ["COMPLETED"]})
    job_id = await app.enqueue(payload={"big": 9_000})
    await app.until(lambda: len(app.record.of("AUDIT")) == 1, "the settled notice")
    assert await app.state(job_id) == "COMPLETED"
    notice = app.record.of("AUDIT")[0].payload
    assert (notice["jobId"], notice["state"], notice["result"]) == (job_id, "COMPLETED", None)


# --------------------------------------------------------------------------------- Settlement notifications
@pytest.mark.parametrize(
    "on_settled",
    [{"binding": "AUDIT", "states": []}, {"binding": "AUDIT", "states": ["DONE"]}, {"binding": "AUDIT"}],
)
def test_on_settled_states_are_required_and_checked(on_settled: dict[str, Any]) -> None:
    # seed "states is required. An empty array or an invalid state raises an exception in defineTsumugi."
    with pytest.raises(TsumugiError):
        define_tsumugi(performers=PERFORMERS, on_settled=on_settled)


async def test_settled_notice_fields_and_both_destinations(local: MakeLocal) -> None:
    # seed SettledNotice table; "If you specify both onFailure and onSettled, FAILED and STALLED jobs included
    # in states are notified to both destinations." "Jobs in the destination binding itself and jobs in the
    # onFailure destination binding are not notified." (J-180a)
    app = await local(
        on_failure="ALERT",
        on_settled={"binding": "AUDIT", "states": ["COMPLETED", "FAILED", "CANCELLED", "STALLED"]},
    )
    done = await app.enqueue(payload={"result": {"sent": 3}})
    failed = await app.enqueue(payload={"fail": "boom"}, max_attempts=1)
    await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice")
    await app.until(lambda: len(app.record.of("AUDIT")) == 2, "two settled notices")
    await app.advance(1_000)
    assert len(app.record.of("AUDIT")) == 2  # the ALERT and AUDIT notice jobs themselves are not notified
    notices = {s.payload["jobId"]: s.payload for s in app.record.of("AUDIT")}
    assert notices[done] == {
        "jobId": done,
        "binding": "MAIL",
        "state": "COMPLETED",
        "attempts": 1,
        "maxAttempts": 3,
        "error": None,
        "result": {"sent": 3},
        "runId": None,
        "nodeId": None,
        "settledAt": START,
    }
    assert notices[failed]["state"] == "FAILED" and notices[failed]["result"] is None
    assert "boom" in notices[failed]["error"]
    assert app.record.of("ALERT")[0].payload["jobId"] == failed


# -------------------------------------------------------------------------------- Defaults at enqueue time
async def test_on_enqueue_defaults_only_unset_options_and_not_notice_jobs(local: MakeLocal) -> None:
    # seed "Values specified by the caller always take precedence, and the defaults apply only to options that
    # are not explicitly set." "onEnqueue is not applied to the notification jobs" (J-42)
    def defaults(item: dict[str, Any]) -> dict[str, Any] | None:
        return (
            {"priority": 7, "max_attempts": 1}
            if item["binding"] == "MAIL" or item["binding"] == "ALERT"
            else None
        )

    app = await local(on_enqueue=defaults, on_failure="ALERT")
    job_id = await app.enqueue(payload={"fail": "x"}, priority=2, delay_ms=MINUTE_MS)
    async with app.rest() as client:
        detail = await app.detail(client, job_id, "SCHEDULED")
        assert (detail["priority"], detail["max_attempts"]) == (2, 1)
        await app.advance(MINUTE_MS)
        await app.settled(job_id, "FAILED")  # max_attempts 1 came from the defaults
        await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice")
        notice = app.record.of("ALERT")[0].job_id
        notice_detail = await app.detail(client, notice, "COMPLETED")
    assert (notice_detail["priority"], notice_detail["max_attempts"]) == (0, 3)


async def test_on_enqueue_does_not_cover_identity_options(local: MakeLocal) -> None:
    # seed "binding, payload, uniqueKey, uniqueForMs, and partitionKey are not covered." (J-42)
    def defaults(item: dict[str, Any]) -> dict[str, Any]:
        return {"unique_key": "same", "payload": {"replaced": True}, "timeout_ms": 5_000}

    app = await local(on_enqueue=defaults)
    first = await app.enqueue(payload={"n": 1}, delay_ms=MINUTE_MS)
    second = await app.enqueue(payload={"n": 2}, delay_ms=MINUTE_MS)
    assert first != second  # no unique key was applied
    async with app.rest() as client:
        detail = await app.detail(client, first, "SCHEDULED")
    assert (detail["unique_key"], detail["payload"]) == (None, '{"n":1}')


def test_create_client_takes_the_same_on_enqueue() -> None:
    # seed "To apply it to jobs enqueued from another Worker as well, pass the same function to createClient."
    client = create_client(on_enqueue=lambda item: {"priority": 1})
    assert callable(client.enqueue) and callable(client.enqueue_many)


async def test_on_enqueue_can_default_the_listed_execution_options(local: MakeLocal) -> None:
    # seed "The execution options that can have defaults are traceparent, priority, maxAttempts, backoff,
    # timeoutMs, guarantee, delayMs, runAt, expiresAt, expiresInMs, and concurrencyKey." (J-42)
    def defaults(item: dict[str, Any]) -> dict[str, Any]:
        return {"delay_ms": MINUTE_MS, "concurrency_key": "k", "guarantee": "at-most-once", "priority": 4}

    app = await local(on_enqueue=defaults)
    job_id = await app.enqueue(binding="CHARGE")
    async with app.rest() as client:
        detail = await app.detail(client, job_id, "SCHEDULED")
    assert (detail["run_after"], detail["concurrency_key"]) == (START + MINUTE_MS, "k")
    assert (detail["guarantee"], detail["priority"]) == ("at-most-once", 4)


# ----------------------------------------------------------------------------------- keys and shard scope
async def test_with_one_shard_unique_key_covers_the_whole_binding(local: MakeLocal) -> None:
    # seed "With one shard, all jobs in the binding are covered." (J-33, J-150)
    app = await local()
    first = await app.enqueue(unique_key="order-1", delay_ms=MINUTE_MS, partition_key="a")
    second = await app.enqueue(unique_key="order-1", delay_ms=MINUTE_MS, partition_key="b")
    assert first == second


async def test_with_shards_the_partition_key_selects_the_scope(local: MakeLocal) -> None:
    # seed "With two or more, only jobs in the same shard, selected by partitionKey, are covered. When you use
    # concurrencyKey or uniqueKey, specify the same key for partitionKey as well." (J-19, J-150)
    app = await local(bindings={"MAIL": {"shards": 4}})
    first = await app.enqueue(unique_key="order-1", partition_key="order-1", delay_ms=MINUTE_MS)
    second = await app.enqueue(unique_key="order-1", partition_key="order-1", delay_ms=MINUTE_MS)
    assert first == second
    shards = {
        parse_job_id(await app.enqueue(partition_key=f"p{n}", delay_ms=MINUTE_MS)).shard for n in range(16)
    }
    assert len(shards) > 1  # jobs are spread over the binding's shards


async def test_runtime_policy_changes_apply_to_all_shards(local: MakeLocal) -> None:
    # seed "Changes do not require a deploy and apply to all shards of the binding." (J-176)
    app = await local(bindings={"MAIL": {"shards": 2}})
    async with app.rest() as client:
        answer = await client.post("/api/bindings/MAIL/policy", json={"concurrency": 7})
        assert answer.status_code == 200
    for shard in (0, 1):
        assert (await shard_for(app.env, "MAIL", shard).diagnostics())["policy"]["concurrency"] == 7


def test_retention_of_the_lists_is_a_separate_setting() -> None:
    # seed "The period for which jobs appear in the dashboard and REST API lists is set separately from the
    # retention periods, with retention." (J-172)
    app = define_tsumugi(performers=PERFORMERS, retention=SweepOptions(older_than_ms=DAY_MS))
    assert app.retention.older_than_ms == DAY_MS


async def test_notices_name_the_run_and_node_that_enqueued_the_job(local: MakeLocal) -> None:
    # seed FailureNotice "runId | Run that enqueued the job" / "nodeId | node that enqueued the job" (J-180)
    flow = create_flow(PERFORMERS)
    failing = flow(lambda f: f.node("boom", "MAIL", input=lambda i, d: {"fail": "in a run"}, max_attempts=1))
    app = await local(on_failure="ALERT", flows={"FAILING": failing})
    run_id = await app.app.start(app.env, "FAILING", {}, id="r1")
    await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice")
    notice = app.record.of("ALERT")[0].payload
    assert (notice["runId"], notice["nodeId"]) == (run_id, "boom")


async def test_a_cancelled_job_gets_a_settled_notice_without_error_or_result(local: MakeLocal) -> None:
    # seed SettledNotice "error | ... null if the job finished in a state other than failure" and "result |
    # ... null for states other than COMPLETED" (J-180a)
    app = await local(on_settled={"binding": "AUDIT", "states": ["CANCELLED"]})
    job_id = await app.enqueue(delay_ms=MINUTE_MS)
    assert await app.shard().cancel(job_id) == {"ok": True}
    await app.until(lambda: len(app.record.of("AUDIT")) == 1, "the settled notice")
    notice = app.record.of("AUDIT")[0].payload
    assert (notice["jobId"], notice["state"], notice["error"], notice["result"]) == (
        job_id,
        "CANCELLED",
        None,
        None,
    )
    assert (notice["attempts"], notice["settledAt"]) == (0, START)


async def test_on_enqueue_is_called_for_every_enqueue_path(local: MakeLocal) -> None:
    # seed "If you specify onEnqueue, it is called each time a job is enqueued, and its return value is used
    # as the default execution options." - enqueue, enqueue_many and POST /api/jobs (J-42)
    seen: list[Any] = []

    def defaults(item: dict[str, Any]) -> dict[str, Any]:
        seen.append(item["payload"]["n"])
        return {"priority": 9}

    app = await local(on_enqueue=defaults)
    single = await app.enqueue(payload={"n": 1}, delay_ms=MINUTE_MS)
    items = [{"binding": "MAIL", "payload": {"n": n}, "delay_ms": MINUTE_MS} for n in (2, 3)]
    await app.app.enqueue_many(app.env, items)
    async with app.rest() as client:
        body = {"binding": "MAIL", "payload": {"n": 4}, "delayMs": MINUTE_MS}
        posted = (await client.post("/api/jobs", json=body)).json()["id"]
        assert (await app.detail(client, single, "SCHEDULED"))["priority"] == 9
        assert (await app.detail(client, posted, "SCHEDULED"))["priority"] == 9
    assert sorted(seen) == [1, 2, 3, 4]


async def test_scheduled_jobs_are_notified_like_any_job(local: MakeLocal) -> None:
    # seed "Jobs of all bindings are subject to notification." - also a job a schedule enqueued, on a shard no
    # client enqueue has reached yet (J-50, J-180)
    schedule = {"binding": "MAIL", "every_ms": MINUTE_MS, "payload": {"fail": "cron"}, "max_attempts": 1}
    app = await local(on_failure="ALERT", schedules={"tick": schedule})

    async def armed() -> bool:
        return [row["next_run_at"] for row in await app.app.list_schedules(app.env)] == [START + MINUTE_MS]

    await app.until(armed, "the scheduler's first sync")
    await app.advance(MINUTE_MS)
    await app.until(lambda: len(app.record.of("ALERT")) == 1, "the failure notice of the scheduled job")
    notice = app.record.of("ALERT")[0].payload
    assert (notice["binding"], notice["state"]) == ("MAIL", "FAILED")
