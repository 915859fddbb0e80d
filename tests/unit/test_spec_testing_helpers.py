"""The shipped testing helpers, called exactly as jobs.md §6.6 names them (J-78, J-79, J-80, J-101, §7.9)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from tsumugi.clock import FixedClock, SystemClock
from tsumugi.core.config import ExponentialBackoff, FixedBackoff, Policy, Rate
from tsumugi.errors import PermanentFailure
from tsumugi.performer import HeartbeatResult, JobContext, Performer
from tsumugi.testing import (
    JobView,
    create_test_context,
    fixed_clock,
    next_attempt,
    run_performer,
    schedule,
)

NOW = 1_700_000_000_000


class Doubler(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        result = await ctx.heartbeat(0.25)
        await ctx.heartbeat()
        ctx.spawn("next", "Doubler", {"n": payload})
        return {"value": payload * 2, "cancel": result.cancel_requested}


def test_create_test_context_defaults() -> None:
    # J-78: job_id="TEST#0:testjob000000000000000000", attempt=1, idempotency_key=<job_id>,
    # deadline_at=now+60000
    clock = fixed_clock(NOW)
    ctx = create_test_context(clock=clock)
    assert ctx.job_id == "TEST#0:testjob000000000000000000"
    assert ctx.attempt == 1
    assert ctx.idempotency_key == "TEST#0:testjob000000000000000000"
    assert ctx.deadline_at == NOW + 60_000
    assert ctx.heartbeats == [] and ctx.spawns == []
    assert isinstance(ctx, JobContext)
    assert list(inspect.signature(create_test_context).parameters)[:4] == [
        "job_id",
        "attempt",
        "idempotency_key",
        "deadline_at",
    ]


def test_create_test_context_takes_each_field_by_keyword() -> None:
    # J-78: idempotency_key follows a given job_id unless given itself
    ctx = create_test_context(job_id="MAIL#0:abc", attempt=4, deadline_at=123)
    assert (ctx.job_id, ctx.attempt, ctx.idempotency_key, ctx.deadline_at) == (
        "MAIL#0:abc",
        4,
        "MAIL#0:abc",
        123,
    )
    assert create_test_context(idempotency_key="k").idempotency_key == "k"


def test_the_default_deadline_reads_the_wall_clock_without_a_clock() -> None:
    # J-78: deadline_at = now + 60000 with the real clock (bounded, never slept on)
    before = SystemClock().now()
    ctx = create_test_context()
    after = SystemClock().now()
    assert before + 60_000 <= ctx.deadline_at <= after + 60_000


async def test_heartbeat_and_spawn_are_recorded() -> None:
    # J-78: heartbeat records progress values (None for no argument); spawn records requests
    ctx = create_test_context()
    result = await run_performer(Doubler(), 21, ctx)
    assert result == {"ok": True, "value": {"value": 42, "cancel": False}}
    assert ctx.heartbeats == [0.25, None]
    assert [(s.id, s.binding, s.payload) for s in ctx.spawns] == [("next", "Doubler", {"n": 21})]


async def test_heartbeat_answers_a_heartbeat_result() -> None:
    # J-69a: heartbeat() returns an object with cancel_requested
    answer = await create_test_context().heartbeat(0.5)
    assert isinstance(answer, HeartbeatResult) and answer.cancel_requested is False


async def test_run_performer_returns_ok_or_error_and_never_raises() -> None:
    # J-79: {ok: True, value} or {ok: False, error}; any object with a perform method works
    class Plain:
        def perform(self, payload: Any, ctx: Any) -> Any:
            return [payload, ctx.attempt]

    class Refusing:
        async def perform(self, payload: Any, ctx: Any) -> None:
            raise PermanentFailure("card declined")

    assert await run_performer(Plain(), "p") == {"ok": True, "value": ["p", 1]}
    failed = await run_performer(Refusing(), None)
    assert set(failed) == {"ok", "error"} and failed["ok"] is False
    assert isinstance(failed["error"], PermanentFailure) and str(failed["error"]) == "card declined"
    assert await run_performer(Plain(), 1, ctx=create_test_context(attempt=3)) == {
        "ok": True,
        "value": [1, 3],
    }


def test_fixed_clock_moves_only_when_told() -> None:
    # J-80: fixed_clock(start) with now(), advance(ms), set(at)
    clock = fixed_clock(1_000)
    assert isinstance(clock, FixedClock)
    assert clock.now() == 1_000
    clock.advance(250)
    assert clock.now() == 1_250
    clock.set(10)
    assert clock.now() == 10


def test_next_attempt_with_the_spec_argument_names() -> None:
    # J-101: next_attempt(attempts, max_attempts, backoff, now, rand=0.5); JS Math.round
    no_jitter = ExponentialBackoff(jitter=False)
    assert next_attempt(1, 3, no_jitter, NOW).run_after == NOW + 1_000
    assert next_attempt(attempts=2, max_attempts=3, backoff=no_jitter, now=NOW).run_after == NOW + 2_000
    assert next_attempt(13, 30, no_jitter, NOW).run_after == NOW + 3_600_000  # J-102: capped
    exhausted = next_attempt(3, 3, no_jitter, NOW)
    assert exhausted.exhausted is True and exhausted.run_after is None


def test_next_attempt_takes_objects_wire_dicts_or_none() -> None:
    # J-100: default backoff is exponential 1000/2/3600000 with equal jitter
    assert next_attempt(1, 3, None, NOW).run_after == NOW + 750  # rand 0.5 -> 500 + 250
    assert next_attempt(1, 3, None, NOW, rand=0.0).run_after == NOW + 500
    assert next_attempt(1, 3, FixedBackoff(delay_ms=30_000), NOW).run_after == NOW + 30_000
    assert next_attempt(1, 3, {"kind": "fixed", "delayMs": 3, "jitter": True}, NOW, 0.0).run_after == NOW + 2
    assert next_attempt(1, 3, {"kind": "fixed", "delay_ms": 10}, NOW).run_after == NOW + 10


def test_schedule_dispatches_by_priority_within_the_policy() -> None:
    # §7.9: schedule(now, jobs, policy, bucket[, key_buckets]) -> decisions, bucket, next_alarm_at, blocked
    jobs = [
        JobView(id="A#0:low", state="SCHEDULED", priority=0, created_at=1),
        JobView(id="A#0:high", state="SCHEDULED", priority=5, created_at=2),
        {"id": "A#0:later", "state": "SCHEDULED", "run_after": NOW + 5_000},
    ]
    result = schedule(NOW, jobs, Policy(concurrency=1))
    assert [d.id for d in result.decisions] == ["A#0:high"]  # J-142, J-143
    assert result.blocked.capacity is True  # J-145
    assert result.next_alarm_at == NOW + 5_000  # J-144
    free = schedule(NOW, jobs, None)
    assert sorted(d.id for d in free.decisions) == ["A#0:high", "A#0:low"]
    assert free.bucket.tokens == float("inf")  # J-146: +inf without a rate


def test_schedule_honours_a_rate_given_as_an_object() -> None:
    # J-143 step 2: tokens < 1 stops the walk
    jobs = [JobView(id=f"A#0:j{n}", state="SCHEDULED", created_at=n) for n in range(3)]
    result = schedule(NOW, jobs, Policy(rate=Rate(tokens=1, interval_ms=1_000)))
    assert len(result.decisions) == 1 and result.blocked.tokens is True


def test_unknown_backoff_kind_is_rejected() -> None:
    # J-29: a backoff with unknown kind is a ValueError
    with pytest.raises(ValueError):
        next_attempt(1, 3, {"kind": "linear"}, NOW)
