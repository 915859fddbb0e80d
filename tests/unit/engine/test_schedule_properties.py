"""Property tests of ``schedule`` against an independent reference model (J-146, J-143, J-149a)."""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tsumugi.core.job_view import JobView
from tsumugi.core.policy import Policy, Rate
from tsumugi.core.schedule import FRESH_BUCKET, Dispatch, candidate_order, schedule
from tsumugi.core.states import can_transition

from .schedule_reference import ref_dispatch

NOW = 10_000_000
KEYS = st.sampled_from([None, None, "a", "b", "c"])


@st.composite
def job_dicts(draw: st.DrawFn, n: int) -> dict[str, Any]:
    state = draw(st.sampled_from(["SCHEDULED", "SCHEDULED", "QUEUED", "RUNNING"]))
    return {
        "id": f"j{n:03d}",
        "state": state,
        "priority": draw(st.integers(-3, 3)),
        "created_at": draw(st.integers(NOW - 600_000, NOW)),
        "run_after": draw(st.integers(NOW - 1000, NOW + 1000)),
        "attempts": draw(st.integers(0, 3)),
        "max_attempts": draw(st.integers(1, 4)),
        "guarantee": draw(st.sampled_from(["at-least-once", "at-most-once"])),
        "timeout_ms": draw(st.integers(0, 120_000)),
        "key": draw(KEYS),
        "dispatched_at": draw(st.integers(NOW - 300_000, NOW)),
        "heartbeat_at": draw(st.none() | st.integers(NOW - 300_000, NOW)),
    }


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    count = draw(st.integers(0, 25))
    jobs = [draw(job_dicts(i)) for i in range(count)]
    params = {
        "concurrency": draw(st.integers(0, 12)),
        "per_key": draw(st.integers(0, 3)),
        "overrides": draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 4), max_size=2)),
        "rate": draw(st.none() | st.tuples(st.integers(0, 8), st.just(1000))),
        "key_rate": draw(st.none() | st.tuples(st.integers(0, 3), st.just(1000))),
        "aging": draw(st.sampled_from([None, 60_000, 1000])),
        "grace": draw(st.integers(0, 60_000)),
        "paused": draw(st.booleans()),
    }
    return jobs, params


def to_view(j: dict[str, Any]) -> JobView:
    in_flight = j["state"] != "SCHEDULED"
    return JobView(
        id=j["id"],
        state=j["state"],
        priority=j["priority"],
        created_at=j["created_at"],
        run_after=j["run_after"],
        attempts=j["attempts"],
        max_attempts=j["max_attempts"],
        guarantee=j["guarantee"],
        timeout_ms=j["timeout_ms"],
        concurrency_key=j["key"],
        dispatched_at=j["dispatched_at"] if in_flight else None,
        heartbeat_at=j["heartbeat_at"] if in_flight else None,
    )


def to_policy(p: dict[str, Any]) -> Policy:
    return Policy(
        concurrency=p["concurrency"],
        per_key_concurrency=p["per_key"],
        per_key_concurrency_overrides=p["overrides"],
        rate=Rate(*p["rate"]) if p["rate"] else None,
        per_key_rate=Rate(*p["key_rate"]) if p["key_rate"] else None,
        aging_interval_ms=p["aging"],
        reaper_grace_ms=p["grace"],
        paused=p["paused"],
    )


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_dispatch_matches_reference_model(world: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    # J-143, J-149a, ADR-0044: same dispatched ids, same order, as the model written from the spec
    jobs, params = world
    views, policy = [to_view(j) for j in jobs], to_policy(params)
    result = schedule(NOW, views, policy)
    assert [d.id for d in result.decisions if isinstance(d, Dispatch)] == ref_dispatch(jobs, NOW, params)
    assert [job.id for job in result.dispatched] == ref_dispatch(jobs, NOW, params)
    # As the shard calls it: the candidates already in dispatch order, which are not sorted again
    in_order = sorted(views, key=lambda v: candidate_order(v, NOW, policy.aging_interval_ms))
    again = schedule(NOW, in_order, policy, ready_in_order=True)
    assert again.dispatched == result.dispatched and set(again.decided) == set(result.decided)
    assert (again.bucket, again.key_buckets, again.next_alarm_at) == (
        result.bucket,
        result.key_buckets,
        result.next_alarm_at,
    )
    assert again.blocked == result.blocked


@settings(max_examples=300, deadline=None)
@given(worlds(), st.randoms())
def test_j146_invariants(world: tuple[list[dict[str, Any]], dict[str, Any]], rnd: random.Random) -> None:
    # J-146
    jobs, params = world
    views = [to_view(j) for j in jobs]
    frozen = copy.deepcopy(views)
    policy = to_policy(params)
    result = schedule(NOW, views, policy, FRESH_BUCKET)
    assert views == frozen  # input not mutated
    ids = [d.id for d in result.decisions]
    assert len(ids) == len(set(ids))  # at most one decision per job
    by_id = {v.id: v for v in views}
    targets = {"Dispatch": "QUEUED", "Reap": "SCHEDULED", "Stall": "STALLED", "Fail": "FAILED"}
    for d in result.decisions:
        assert can_transition(by_id[d.id].state, targets[type(d).__name__])  # every decision is legal
    reaped = {d.id for d in result.decisions if not isinstance(d, Dispatch)}
    live = [v for v in views if v.state != "SCHEDULED" and v.id not in reaped]
    sent = [by_id[d.id] for d in result.decisions if isinstance(d, Dispatch)]
    assert len(sent) <= max(0, policy.concurrency - len(live))  # dispatch count <= free slots
    for key in {v.concurrency_key for v in views if v.concurrency_key}:
        before = sum(1 for v in live if v.concurrency_key == key)
        after = before + sum(1 for v in sent if v.concurrency_key == key)
        assert after <= max(policy.key_concurrency(key), before)
    assert result.bucket.tokens >= 0
    if policy.rate is None:
        assert result.bucket.tokens == float("inf")
    assert all(b.tokens >= 0 for b in result.key_buckets.values())
    if reaped:
        assert result.next_alarm_at == NOW  # any non-dispatch decision forces now
    shuffled = views[:]
    rnd.shuffle(shuffled)
    again = schedule(NOW, shuffled, policy, FRESH_BUCKET)
    assert {d.id for d in again.decisions if isinstance(d, Dispatch)} == {d.id for d in sent}
