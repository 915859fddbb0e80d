"""The pure dispatch decision, table tests (J-140..J-146, J-149a, J-149b)."""

from __future__ import annotations

from tsumugi.core.job_view import JobView
from tsumugi.core.policy import Policy, Rate
from tsumugi.core.schedule import Bucket, ConfirmCancel, Dispatch, Expire, Fail, Reap, Stall, schedule

NOW = 1_000_000


def ready(job_id: str, **kw: object) -> JobView:
    return JobView(id=job_id, state="SCHEDULED", run_after=NOW, created_at=NOW, **kw)  # type: ignore[arg-type]


def running(job_id: str, dispatched_at: int = NOW, **kw: object) -> JobView:
    return JobView(id=job_id, state="QUEUED", dispatched_at=dispatched_at, created_at=0, **kw)  # type: ignore[arg-type]


def dispatched(result: object) -> list[str]:
    return [d.id for d in result.decisions if isinstance(d, Dispatch)]  # type: ignore[attr-defined]


def test_reaper_decisions_by_guarantee_and_attempts() -> None:
    # J-112 with ADR-0045 (the silent attempt counts); J-111 deadline inclusive
    old = NOW - 60_000 - 30_000
    jobs = [
        running("a", old, attempts=0, max_attempts=3),
        running("b", old, attempts=2, max_attempts=3),
        running("c", old, guarantee="at-most-once"),
        running("d", old + 1),
    ]
    result = schedule(NOW, jobs, Policy())
    assert set(result.decisions) == {Reap("a", 1), Fail("b", 3), Stall("c", 1)}
    assert result.next_alarm_at == NOW  # J-146: a non-dispatch decision forces now


def test_heartbeat_moves_silence_origin() -> None:
    # J-111: max(dispatched_at, heartbeat_at) + timeout + grace
    job = running("a", NOW - 90_000, heartbeat_at=NOW - 10)
    result = schedule(NOW, [job], Policy())
    assert result.decisions == ()
    assert result.next_alarm_at == NOW - 10 + 90_000


def test_cancel_request_reaped_after_grace() -> None:
    # J-135: no report within reaper_grace_ms of the request -> CANCELLED
    job = running("a", NOW, cancel_requested_at=NOW - 30_000)
    assert schedule(NOW, [job], Policy()).decisions == (ConfirmCancel("a"),)


def test_priority_then_created_then_id() -> None:
    # J-142
    jobs = [
        ready("b", priority=1),
        ready("a", priority=1),
        JobView(id="old", state="SCHEDULED", run_after=NOW, created_at=NOW - 1, priority=1),
        ready("hi", priority=5),
    ]
    result = schedule(NOW, jobs, Policy(concurrency=3))
    assert dispatched(result) == ["hi", "old", "a"]
    assert result.blocked.capacity


def test_aging_lets_old_low_priority_overtake() -> None:
    # J-150a: +1 per minute from creation
    old = JobView(id="old", state="SCHEDULED", run_after=NOW, created_at=NOW - 600_000, priority=0)
    new = ready("new", priority=5)
    assert dispatched(schedule(NOW, [new, old], Policy(concurrency=1))) == ["old"]
    assert dispatched(schedule(NOW, [new, old], Policy(concurrency=1, aging_interval_ms=None))) == ["new"]


def test_capacity_counts_in_flight_and_uncounted() -> None:
    # J-141, J-143.1; ADR-0043: jobs outside the window are counted too
    result = schedule(
        NOW, [running("r"), ready("a"), ready("b")], Policy(concurrency=3), uncounted_in_flight=1
    )
    assert dispatched(result) == ["a"]
    assert result.blocked.capacity


def test_per_key_skip_does_not_stop_others() -> None:
    # J-143.3: a full key is skipped, other keys continue
    jobs = [
        running("r", concurrency_key="k"),
        ready("a", concurrency_key="k"),
        ready("b", concurrency_key="j"),
    ]
    result = schedule(NOW, jobs, Policy())
    assert dispatched(result) == ["b"]
    assert result.blocked.per_key and not result.blocked.capacity


def test_per_key_override() -> None:
    # ADR-0044: perKeyConcurrencyOverrides
    jobs = [ready(f"v{i}", concurrency_key="vip") for i in range(4)] + [ready("n1", concurrency_key="n")]
    policy = Policy(per_key_concurrency_overrides={"vip": 3})
    assert sorted(dispatched(schedule(NOW, jobs, policy))) == ["n1", "v0", "v1", "v2"]


def test_global_tokens_stop_and_plan_wake_up() -> None:
    # J-143.2, J-144, J-148
    jobs = [ready("a"), ready("b"), ready("c")]
    result = schedule(NOW, jobs, Policy(rate=Rate(2, 1000)))
    assert dispatched(result) == ["a", "b"]
    assert result.blocked.tokens
    assert result.bucket == Bucket(0, NOW)
    assert result.next_alarm_at == NOW + 500


def test_per_key_tokens_skip_and_wake() -> None:
    # J-143.4, J-149a
    jobs = [ready("a", concurrency_key="k"), ready("b", concurrency_key="k"), ready("c")]
    policy = Policy(per_key_concurrency=5, per_key_rate=Rate(1, 1000))
    result = schedule(NOW, jobs, policy)
    assert dispatched(result) == ["a", "c"]
    assert result.blocked.per_key_tokens
    assert result.key_buckets["k"] == Bucket(0, NOW)
    assert result.next_alarm_at == NOW + 1000


def test_pause_stops_dispatch_but_not_reaping() -> None:
    # J-149b
    old = NOW - 100_000
    result = schedule(NOW, [running("r", old), ready("a")], Policy(paused=True))
    assert result.decisions == (Reap("r", 1),)
    assert result.blocked.paused


def test_expired_ready_job_is_cancelled_not_dispatched() -> None:
    # J-41
    result = schedule(NOW, [ready("a", expires_at=NOW), ready("b")], Policy())
    assert result.decisions == (Expire("a"), Dispatch("b"))


def test_next_alarm_is_earliest_future_run_after_or_deadline() -> None:
    # J-144: no alarm for capacity waits; None when nothing to do
    future = JobView(id="f", state="SCHEDULED", run_after=NOW + 5000, created_at=NOW)
    assert schedule(NOW, [future], Policy()).next_alarm_at == NOW + 5000
    assert schedule(NOW, [], Policy()).next_alarm_at is None
    result = schedule(NOW, [ready("a")], Policy())
    assert result.next_alarm_at == NOW + 60_000 + 30_000
    blocked = schedule(NOW, [ready("a")], Policy(concurrency=0))
    assert blocked.next_alarm_at is None and blocked.blocked.capacity


def test_candidates_given_in_dispatch_order_are_taken_as_given() -> None:
    # J-142 as the shard calls it: it reads the ready jobs in dispatch order, so they are not sorted again
    jobs = [ready("b", priority=1), ready("a", priority=5)]
    assert dispatched(schedule(NOW, jobs, Policy(concurrency=1))) == ["a"]
    taken = schedule(NOW, jobs, Policy(concurrency=1), ready_in_order=True)
    assert dispatched(taken) == ["b"] and [job.id for job in taken.dispatched] == ["b"]
    assert taken.blocked.capacity
