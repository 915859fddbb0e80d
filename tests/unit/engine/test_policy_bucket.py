"""Policy wire defaults and merging (J-147, J-51, J-176), token buckets (J-148, J-149a)."""

from __future__ import annotations

import math

from tsumugi.core.policy import Rate, merge_policy, policy_from_wire, settings_from_wire
from tsumugi.core.schedule import FRESH_BUCKET, Bucket, is_full, ms_until_token, refill


def test_policy_defaults() -> None:
    # J-147
    wire = policy_from_wire(None).to_wire()
    assert wire["concurrency"] == 100
    assert wire["perKeyConcurrency"] == 1
    assert wire["rate"] is None and wire["perKeyRate"] is None
    assert wire["agingIntervalMs"] == 60_000
    assert wire["reaperGraceMs"] == 30_000
    assert wire["paused"] is False


def test_settings_replace_reverts_omitted_fields() -> None:
    # J-51: policy = defaults overlaid; retention given or default
    settings = settings_from_wire({"policy": {"concurrency": 5}})
    assert settings.policy.concurrency == 5
    assert settings.sweep_after_ms == 300_000
    assert settings.failed_retention_ms == 604_800_000
    assert settings_from_wire({"policy": {"concurrency": None}}).policy.concurrency == 100  # J-28


def test_aging_null_disables_rather_than_defaults() -> None:
    # seed page: agingIntervalMs null means no aging
    assert policy_from_wire({"agingIntervalMs": None}).aging_interval_ms is None


def test_merge_changes_only_given_fields() -> None:
    # J-176
    base = policy_from_wire({"concurrency": 5, "rate": {"tokens": 10, "intervalMs": 1000}})
    merged = merge_policy(base, {"paused": True})
    assert merged.paused and merged.concurrency == 5 and merged.rate == Rate(10, 1000)


def test_per_key_overrides() -> None:
    # ADR-0044: overrides per key, the single value stays the default
    policy = policy_from_wire(
        {
            "perKeyConcurrency": 2,
            "perKeyConcurrencyOverrides": {"vip": 5},
            "perKeyRate": {"tokens": 1, "intervalMs": 1000},
            "perKeyRateOverrides": {"free": None, "k": {"tokens": 3, "intervalMs": 10}},
        }
    )
    assert policy.key_concurrency("vip") == 5 and policy.key_concurrency("x") == 2
    assert policy.key_rate("free") is None
    assert policy.key_rate("k") == Rate(3, 10)
    assert policy.key_rate("x") == Rate(1, 1000)
    assert policy_from_wire(policy.to_wire()) == policy


def test_fresh_bucket_is_full_after_first_refill() -> None:
    # J-148: initial +inf capped to T
    rate = Rate(10, 1000)
    assert refill(FRESH_BUCKET, rate, 0) == Bucket(10, 0)
    assert refill(FRESH_BUCKET, None, 0).tokens == math.inf


def test_continuous_refill_capped() -> None:
    # J-148: T/I tokens per ms, capped at T, negative elapsed counts as 0
    rate = Rate(10, 1000)
    assert refill(Bucket(0, 0), rate, 500).tokens == 5
    assert refill(Bucket(0, 0), rate, 10_000).tokens == 10
    assert refill(Bucket(3, 100), rate, 50) == Bucket(3, 50)


def test_time_until_a_token() -> None:
    # J-148: ceil((1 - tokens) / (T/I)); a zero rate plans no wake-up
    assert ms_until_token(Bucket(0, 0), Rate(10, 1000)) == 100
    assert ms_until_token(Bucket(0.5, 0), Rate(1, 1000)) == 500
    assert ms_until_token(Bucket(0, 0), Rate(0, 1000)) is None


def test_full_buckets_need_no_storage() -> None:
    # J-149, J-149a
    assert is_full(Bucket(10, 0), Rate(10, 1000))
    assert not is_full(Bucket(9.5, 0), Rate(10, 1000))
    assert is_full(Bucket(0, 0), None)
