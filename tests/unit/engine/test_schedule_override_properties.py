"""Property tests of per-key rates and per-key overrides (J-143, J-148, J-149a, ADR-0056).

The reference below is written from the spec, independent of ``core/schedule.py``: a naive walk with
its own token-bucket arithmetic. It covers what ``schedule_reference.ref_dispatch`` leaves out: per-key
rate overrides (a mapping whose null means "no rate for this key"), stored global and per-key buckets
that refill with time, and the function form of overrides, which the client resolves into a mapping.
A multi-tick simulation then checks the rates as bounds over time.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tsumugi.core.config_policy import Policy as ConfigPolicy
from tsumugi.core.config_policy import Rate as ConfigRate
from tsumugi.core.job_view import JobView
from tsumugi.core.policy import Policy, Rate, policy_from_wire
from tsumugi.core.schedule import Bucket, Dispatch, schedule

NOW = 50_000_000
KEYS = ["a", "b", "c"]
RateTuple = tuple[int, int]  # (tokens, interval_ms)


def ref_refill(stored: tuple[float, int] | None, rate: RateTuple, now: int) -> float:
    """J-148: a bucket never stored is full; otherwise refilled continuously, capped at ``tokens``."""
    tokens, interval = rate
    if stored is None:
        return float(tokens)
    level, at = stored
    return min(float(tokens), level + max(0, now - at) * tokens / interval)


def ref_key_rate(key: str, p: dict[str, Any]) -> RateTuple | None:
    """ADR-0056: an override (None = unlimited) wins over the shared ``per_key_rate``."""
    if key in p["rate_overrides"]:
        rate: RateTuple | None = p["rate_overrides"][key]
        return rate
    shared: RateTuple | None = p["key_rate"]
    return shared


def ref_dispatch(
    ready: list[dict[str, Any]], in_flight: dict[str | None, int], now: int, p: dict[str, Any]
) -> list[str]:
    """J-143 for SCHEDULED-and-due jobs (no aging: equal priorities tie on created_at, then id)."""
    order = sorted(ready, key=lambda j: (-j["priority"], j["created_at"], j["id"]))
    slots = max(0, p["concurrency"] - sum(in_flight.values()))
    tokens = math.inf if p["rate"] is None else ref_refill(p["bucket"], p["rate"], now)
    per_key = {k: n for k, n in in_flight.items() if k is not None}
    key_tokens: dict[str, float] = {}
    out: list[str] = []
    for job in order:
        if slots <= 0 or tokens < 1:
            break
        key = job["key"]
        if key is not None:
            if per_key.get(key, 0) >= p["concurrency_overrides"].get(key, p["per_key"]):
                continue
            rate = ref_key_rate(key, p)
            if rate is not None:
                if key not in key_tokens:
                    key_tokens[key] = ref_refill(p["key_buckets"].get(key), rate, now)
                if key_tokens[key] < 1:
                    continue
                key_tokens[key] -= 1
            per_key[key] = per_key.get(key, 0) + 1
        slots -= 1
        tokens -= 1
        out.append(job["id"])
    return out


RATES = st.tuples(st.integers(0, 4), st.sampled_from([100, 1_000, 60_000]))
STORED = st.tuples(st.floats(0, 4, allow_nan=False), st.integers(NOW - 5_000, NOW))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str | None, int], dict[str, Any]]:
    ready = [
        {
            "id": f"j{n:03d}",
            "priority": draw(st.integers(0, 2)),
            "created_at": draw(st.integers(NOW - 10_000, NOW)),
            "key": draw(st.sampled_from([None, *KEYS])),
        }
        for n in range(draw(st.integers(0, 20)))
    ]
    in_flight = {key: draw(st.integers(0, 2)) for key in [None, *KEYS]}
    rate = draw(st.none() | RATES)
    key_rate = draw(st.none() | RATES)
    rate_overrides = draw(st.dictionaries(st.sampled_from(KEYS), st.none() | RATES, max_size=3))
    keyed_rates = {k for k in KEYS if (rate_overrides[k] if k in rate_overrides else key_rate) is not None}
    params: dict[str, Any] = {
        "concurrency": draw(st.integers(0, 15)),
        "per_key": draw(st.integers(0, 3)),
        "concurrency_overrides": draw(st.dictionaries(st.sampled_from(KEYS), st.integers(0, 4), max_size=3)),
        "rate": rate,
        "key_rate": key_rate,
        "rate_overrides": rate_overrides,
        "bucket": draw(st.none() | STORED) if rate is not None else None,
        "key_buckets": {k: draw(STORED) for k in sorted(keyed_rates) if draw(st.booleans())},
    }
    if rate is not None and params["bucket"] is not None:
        params["bucket"] = (min(params["bucket"][0], rate[0]), params["bucket"][1])
    for k, (level, at) in list(params["key_buckets"].items()):
        limit = ref_key_rate(k, params)
        assert limit is not None
        params["key_buckets"][k] = (min(level, limit[0]), at)
    return ready, in_flight, params


def _rate(value: RateTuple | None) -> Rate | None:
    return None if value is None else Rate(*value)


def _views(ready: list[dict[str, Any]], in_flight: dict[str | None, int]) -> list[JobView]:
    views = [
        JobView(
            id=j["id"],
            state="SCHEDULED",
            priority=j["priority"],
            created_at=j["created_at"],
            run_after=NOW,
            concurrency_key=j["key"],
        )
        for j in ready
    ]
    for key, count in in_flight.items():
        views += [
            JobView(
                id=f"f-{key}-{n}", state="RUNNING", concurrency_key=key, dispatched_at=NOW, created_at=NOW
            )
            for n in range(count)
        ]
    return views


def _run(
    policy: Policy, ready: list[dict[str, Any]], in_flight: dict[str | None, int], p: dict[str, Any]
) -> list[str]:
    bucket = Bucket(*p["bucket"]) if p["bucket"] is not None else Bucket()
    key_buckets = {k: Bucket(level, at) for k, (level, at) in p["key_buckets"].items()}
    result = schedule(NOW, _views(ready, in_flight), policy, bucket, key_buckets)
    return [d.id for d in result.decisions if isinstance(d, Dispatch)]


@settings(max_examples=400, deadline=None)
@given(worlds())
def test_mapping_overrides_and_stored_buckets_match_the_reference(
    world: tuple[list[dict[str, Any]], dict[str | None, int], dict[str, Any]],
) -> None:
    # J-143 steps 1-5, J-148 refill of stored buckets, J-149a per-key buckets, ADR-0056 mapping overrides
    ready, in_flight, p = world
    policy = Policy(
        concurrency=p["concurrency"],
        per_key_concurrency=p["per_key"],
        per_key_concurrency_overrides=p["concurrency_overrides"],
        rate=_rate(p["rate"]),
        per_key_rate=_rate(p["key_rate"]),
        per_key_rate_overrides={k: _rate(v) for k, v in p["rate_overrides"].items()},
        aging_interval_ms=None,
    )
    assert _run(policy, ready, in_flight, p) == ref_dispatch(ready, in_flight, NOW, p)


@st.composite
def function_worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str | None, int], dict[str, Any]]:
    ready, in_flight, p = draw(worlds())
    # A function of the key: a table with holes; None means "use the shared value" (ADR-0056).
    p["concurrency_table"] = draw(st.dictionaries(st.sampled_from(KEYS), st.none() | st.integers(0, 4)))
    p["rate_table"] = draw(st.dictionaries(st.sampled_from(KEYS), st.none() | RATES))
    p["concurrency_overrides"] = {k: v for k, v in p["concurrency_table"].items() if v is not None}
    p["rate_overrides"] = {k: v for k, v in p["rate_table"].items() if v is not None}
    p["key_buckets"] = {}
    return ready, in_flight, p


def _config_rate(value: RateTuple | None) -> ConfigRate | None:
    return None if value is None else ConfigRate(*value)


@settings(max_examples=300, deadline=None)
@given(function_worlds())
def test_function_overrides_resolve_to_the_same_dispatch(
    world: tuple[list[dict[str, Any]], dict[str | None, int], dict[str, Any]],
) -> None:
    # ADR-0056: the client evaluates the functions for the enqueued keys; the shard reads the mapping
    ready, in_flight, p = world
    configured = ConfigPolicy(
        concurrency=p["concurrency"],
        per_key_concurrency=p["per_key"],
        rate=_config_rate(p["rate"]),
        per_key_rate=_config_rate(p["key_rate"]),
        aging_interval_ms=None,
        per_key_concurrency_overrides=lambda key: p["concurrency_table"].get(key),
        per_key_rate_overrides=lambda key: _config_rate(p["rate_table"].get(key)),
    )
    keys = sorted({j["key"] for j in ready if j["key"] is not None})
    policy = policy_from_wire(configured.to_wire(keys))
    expected = ref_dispatch(ready, in_flight, NOW, {**p, "bucket": None})
    assert _run(policy, ready, in_flight, {**p, "bucket": None}) == expected


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(KEYS), RATES.filter(lambda r: r[0] > 0), min_size=1),
    st.lists(st.integers(0, 1_500), min_size=1, max_size=25),
    st.lists(st.sampled_from(KEYS), min_size=1, max_size=40),
    st.integers(1, 3),
)
def test_per_key_rates_bound_dispatches_over_time(
    rates: dict[str, RateTuple], steps: list[int], keys: list[str], per_key: int
) -> None:
    # J-148, J-149a: in any window [t0, t1] a key dispatches at most tokens + (t1 - t0) * tokens / interval;
    # J-143.3: never more than its concurrency in flight. Buckets carry over ticks as the shard stores them.
    policy = Policy(
        concurrency=1_000,
        per_key_concurrency=per_key,
        per_key_rate=Rate(1, 1_000),
        per_key_rate_overrides={k: Rate(*r) for k, r in rates.items()},
        aging_interval_ms=None,
    )
    waiting = [
        JobView(id=f"j{n:03d}", state="SCHEDULED", created_at=n, concurrency_key=k)
        for n, k in enumerate(keys)
    ]
    running: list[JobView] = []
    stored: dict[str, Bucket] = {}
    sent: dict[str, list[int]] = {}
    now = NOW
    for step in steps:
        now += step
        running = running[len(running) // 2 :]  # half of what runs completes between ticks
        result = schedule(now, waiting + running, policy, Bucket(), stored)
        stored = {**stored, **result.key_buckets}
        ids = {d.id for d in result.decisions if isinstance(d, Dispatch)}
        for job in waiting:
            if job.id in ids:
                assert job.concurrency_key is not None
                sent.setdefault(job.concurrency_key, []).append(now)
                running.append(
                    JobView(
                        id=job.id, state="RUNNING", concurrency_key=job.concurrency_key, dispatched_at=now
                    )
                )
        waiting = [j for j in waiting if j.id not in ids]
        for key in KEYS:
            assert sum(1 for j in running if j.concurrency_key == key) <= per_key
    for key, times in sent.items():
        tokens, interval = rates.get(key, (1, 1_000))
        for i, start in enumerate(times):
            for j in range(i, len(times)):
                window = times[j] - start
                assert j - i + 1 <= tokens + window * tokens / interval + 1e-9
