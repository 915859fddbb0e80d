"""The queue consumer against a recording fake shard (J-61, J-73, J-107, J-116..J-119, J-41, J-76)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.errors import PermanentFailure, RetryAfter
from tsumugi.execution import PerformersResolver, handle_batch
from tsumugi.performer import JobContext, Performer


class Echo(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        return {"echo": payload}


class Boom(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        raise ValueError("boom")


async def run(harness: Any, *messages: Any, performers: Any = None, clock: Any = None) -> None:
    resolver = PerformersResolver(performers if performers is not None else {"MAIL": Echo})
    await handle_batch(messages, harness.env, resolver=resolver, clock=clock or FixedClock(1_000))


async def test_success_is_acked_then_reported_with_result_and_attempt(harness: Any) -> None:
    message = harness.message(attempt=2)
    await run(harness, message)
    # J-118: ack before report; J-119: {ok, result} plus the attempt number (ADR-0118)
    assert harness.events == [("ack", "MAIL#0:job1"), ("report", "MAIL#0:job1")]
    assert harness.shard().reports == [
        ("MAIL#0:job1", {"ok": True, "result": {"echo": {"to": "a@example.com"}}, "attempt": 2})
    ]


async def test_failure_reports_the_python_traceback(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    await run(harness, harness.message(), performers={"MAIL": Boom})
    ((_, outcome),) = harness.shard().reports
    assert outcome["ok"] is False and outcome["attempt"] == 1
    # J-73: traceback.format_exception text, ending in "Name: message"
    assert outcome["error"].startswith("Traceback (most recent call last):")
    assert outcome["error"].rstrip().endswith("ValueError: boom")
    assert "tsumugi: perform failed (MAIL#0:job1)" in caplog.text
    assert harness.events[0] == ("ack", "MAIL#0:job1")


async def test_message_without_job_id_is_acked_and_logged(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    message = harness.message(jobId=None)
    await run(harness, message)
    # J-117: logged, acked, never reported
    assert message.acks == 1
    assert harness.shard().reports == []
    assert "tsumugi: invalid dispatch message: jobId is missing" in caplog.text


async def test_unknown_performer_is_an_ordinary_failure(harness: Any) -> None:
    await run(harness, harness.message(), performers={})
    # J-61: exact text, reported as a failure (retried by the shard)
    assert harness.shard().reports == [
        (
            "MAIL#0:job1",
            {
                "ok": False,
                "error": "performer not found: MAIL (export it, or add a service binding)",
                "attempt": 1,
            },
        )
    ]


async def test_service_binding_in_env_is_used_when_no_local_class(harness: Any) -> None:
    class Service:
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            return "remote"

    harness.env["MAIL"] = Service()
    await run(harness, harness.message(), performers={})
    # J-61: env[binding] after the local exports
    assert harness.shard().reports[0][1]["result"] == "remote"


async def test_claim_won_runs_the_performer(harness: Any) -> None:
    await run(harness, harness.message(claimRequired=True))
    # J-107: claim, then run, ack, report
    assert harness.events == [("claim", "MAIL#0:job1"), ("ack", "MAIL#0:job1"), ("report", "MAIL#0:job1")]


async def test_claim_lost_acks_without_running_or_reporting(harness: Any) -> None:
    ran: list[str] = []

    class Track(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            ran.append(ctx.job_id)

    harness.shard().claim_result = False
    await run(harness, harness.message(claimRequired=True), performers={"MAIL": Track})
    # J-107: the loser acks and exits
    assert ran == []
    assert harness.events == [("claim", "MAIL#0:job1"), ("ack", "MAIL#0:job1")]


async def test_claim_rpc_error_is_a_reported_failure(harness: Any) -> None:
    ran: list[str] = []

    class Track(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            ran.append(ctx.job_id)

    harness.shard().claim_result = ConnectionError("shard unreachable")
    await run(harness, harness.message(claimRequired=True), performers={"MAIL": Track})
    # J-107: the performer did not run; the failure is reported and retried by the shard
    assert ran == []
    ((_, outcome),) = harness.shard().reports
    assert outcome["ok"] is False and "ConnectionError: shard unreachable" in outcome["error"]
    assert harness.events[-2:] == [("ack", "MAIL#0:job1"), ("report", "MAIL#0:job1")]


async def test_expired_message_is_expired_and_acked_without_running(harness: Any) -> None:
    ran: list[str] = []

    class Track(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            ran.append(ctx.job_id)

    clock = FixedClock(5_000)
    await run(harness, harness.message(expiresAt=5_000), performers={"MAIL": Track}, clock=clock)
    # J-41: now >= expiresAt -> expire, ack, no run, no report
    assert ran == []
    assert harness.events == [("expire", "MAIL#0:job1"), ("ack", "MAIL#0:job1")]


async def test_not_yet_expired_message_runs(harness: Any) -> None:
    await run(harness, harness.message(expiresAt=5_001), clock=FixedClock(5_000))
    assert harness.shard().reports[0][1]["ok"] is True  # J-41: strictly before expiresAt still runs


async def test_expiry_is_checked_again_after_a_won_claim(harness: Any) -> None:
    clock = FixedClock(4_000)
    shard = harness.shard()
    original_claim = shard.claim

    async def slow_claim(job_id: str) -> bool:
        clock.advance(2_000)  # the claim round trip crossed the expiry
        return await original_claim(job_id)

    shard.claim = slow_claim
    await run(harness, harness.message(claimRequired=True, expiresAt=5_000), clock=clock)
    # J-41: checked again after a successful claim
    assert harness.events == [("claim", "MAIL#0:job1"), ("expire", "MAIL#0:job1"), ("ack", "MAIL#0:job1")]


async def test_report_failure_is_logged_not_raised(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    harness.shard().report_error = ConnectionError("lost")
    message = harness.message()
    await run(harness, message)
    # J-118: logged, never rethrown; the message was acked first
    assert message.acks == 1
    assert "tsumugi: report failed (MAIL#0:job1)" in caplog.text


async def test_permanent_failure_and_retry_after_become_retry_fields(harness: Any) -> None:
    class Signals(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            if payload == "never":
                raise PermanentFailure("card declined")
            if payload == "delay":
                raise RetryAfter("busy", delay_ms=5_000)
            raise RetryAfter("later", at=99_000)

    messages = [
        harness.message("a", payload="never"),
        harness.message("b", payload="delay"),
        harness.message("c", payload="at"),
    ]
    await run(harness, *messages, performers={"MAIL": Signals}, clock=FixedClock(10_000))
    retries = {job_id: outcome.get("retry") for job_id, outcome in harness.shard().reports}
    # J-76: encoded in the report, not in exception identity
    assert retries == {
        "MAIL#0:a": {"kind": "never"},
        "MAIL#0:b": {"kind": "at", "at": 15_000},
        "MAIL#0:c": {"kind": "at", "at": 99_000},
    }


async def test_spawns_ride_on_the_success_report(harness: Any) -> None:
    class Spawner(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            ctx.spawn("child", "MAIL", {"n": 1}, {"max_attempts": 2})
            return "done"

    await run(harness, harness.message(), performers={"MAIL": Spawner})
    # J-119: spawns only on success, options in wire spelling
    assert harness.shard().reports[0][1]["spawns"] == [
        {"id": "child", "binding": "MAIL", "payload": {"n": 1}, "options": {"maxAttempts": 2}}
    ]


async def test_failed_attempt_drops_its_spawns(harness: Any) -> None:
    class Spawner(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            ctx.spawn("child", "MAIL", {})
            raise RuntimeError("no")

    await run(harness, harness.message(), performers={"MAIL": Spawner})
    assert "spawns" not in harness.shard().reports[0][1]  # J-119


async def test_a_bad_spawn_id_fails_the_attempt_in_the_performer(harness: Any) -> None:
    class Spawner(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            ctx.spawn("bad id!", "MAIL", {})

    await run(harness, harness.message(), performers={"MAIL": Spawner})
    # F-57, F-3: refused in ctx.spawn, so the attempt fails like any error and no run sees the id
    [(_, report)] = harness.shard().reports
    assert report["ok"] is False and "spawns" not in report
    assert (
        'InvalidFlowError: invalid node id: "bad id!" (alphanumeric, hyphen and underscore only)'
        in report["error"]
    )


async def test_messages_of_a_batch_run_concurrently(harness: Any) -> None:
    first_started = asyncio.Event()

    class Pair(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            if payload == "first":
                first_started.set()
                return "first"
            await first_started.wait()  # deadlocks unless both run at once
            return "second"

    await run(
        harness,
        harness.message("b", payload="second"),
        harness.message("a", payload="first"),
        performers={"MAIL": Pair},
    )
    # J-117: concurrently; both reported
    assert sorted(o["result"] for _, o in harness.shard().reports) == ["first", "second"]


async def test_context_fields_and_one_instance_per_binding_per_batch(harness: Any) -> None:
    seen: list[tuple[Any, ...]] = []
    instances: list[int] = []

    class Inspect(Performer):
        def __init__(self, ctx: Any = None, env: Any = None) -> None:
            super().__init__(ctx, env)
            instances.append(id(self))

        async def perform(self, payload: Any, ctx: JobContext) -> None:
            seen.append((ctx.job_id, ctx.attempt, ctx.idempotency_key, ctx.deadline_at, ctx.traceparent))
            assert self.env is harness.env  # J-60: built with (ctx, env)

    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    await run(
        harness,
        harness.message("a", attempt=3, timeoutMs=2_000, traceparent=tp),
        harness.message("b"),
        performers={"MAIL": Inspect},
        clock=FixedClock(1_000),
    )
    # §6.2: deadline_at = start + timeout_ms; idempotency_key = job id
    assert sorted(seen) == [
        ("MAIL#0:a", 3, "MAIL#0:a", 3_000, tp),
        ("MAIL#0:b", 1, "MAIL#0:b", 61_000, None),
    ]
    assert len(instances) == 1


async def test_synchronous_perform_is_supported(harness: Any) -> None:
    class Sync:
        def perform(self, payload: Any, ctx: JobContext) -> int:
            return 7

    harness.env["MAIL"] = Sync()
    await run(harness, harness.message(), performers={})
    assert harness.shard().reports[0][1]["result"] == 7  # J-60: sync or async


async def test_a_crash_inside_handling_is_logged_and_the_message_acked(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    message = harness.message()
    await handle_batch([message], {"JOB_SHARD": None}, resolver=PerformersResolver({"MAIL": Echo}))
    # J-118: never rethrown
    assert message.acks == 1
    assert "tsumugi: handleOne rejected" in caplog.text


async def test_logs_go_to_the_given_logger(harness: Any, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("custom.consumer")
    message = harness.message(jobId=7)
    await handle_batch([message], harness.env, resolver=PerformersResolver({}), log=logger)
    assert [r.name for r in caplog.records] == ["custom.consumer"]
