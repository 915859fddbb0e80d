"""Configuration values: defaults, validation and camelCase wire forms (§10, J-50, J-100, J-147, J-180a)."""

from __future__ import annotations

import pytest

from tsumugi.core.config import (
    BindingConfig,
    ExponentialBackoff,
    FixedBackoff,
    OnSettled,
    Policy,
    Rate,
    RunSettings,
    SweepOptions,
    backoff_from,
    binding_config_from,
    policy_from,
)
from tsumugi.errors import ConfigurationError, InvalidConfigError


def test_policy_defaults_on_the_wire() -> None:
    # J-147: concurrency 100, perKeyConcurrency 1, rate null, aging 60 s, grace 30 s; [NEW] perKeyRate, paused
    assert Policy().to_wire() == {
        "concurrency": 100,
        "perKeyConcurrency": 1,
        "rate": None,
        "perKeyRate": None,
        "agingIntervalMs": 60_000,
        "reaperGraceMs": 30_000,
        "paused": False,
    }


def test_policy_with_rates_and_aging_disabled() -> None:
    policy = Policy(
        concurrency=20,
        rate=Rate(100, 60_000),
        per_key_rate={"tokens": 10, "intervalMs": 60_000},
        aging_interval_ms=None,
        paused=True,
    )
    wire = policy.to_wire()
    assert wire["rate"] == {"tokens": 100, "intervalMs": 60_000}
    assert wire["perKeyRate"] == {"tokens": 10, "intervalMs": 60_000}
    assert wire["agingIntervalMs"] is None  # null disables aging (seed page)
    assert wire["paused"] is True


@pytest.mark.parametrize(
    "kwargs",
    [
        {"concurrency": -1},
        {"per_key_concurrency": -2},
        {"concurrency": 1.5},
        {"concurrency": True},
        {"reaper_grace_ms": -1},
        {"paused": "yes"},
        {"aging_interval_ms": "soon"},
        {"rate": Rate(1, 1000), "per_key_rate": {"tokens": 1}},
    ],
)
def test_policy_rejects_malformed_limits(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        Policy(**kwargs)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, ConfigurationError)


@pytest.mark.parametrize("tokens,interval_ms", [(-1, 1000), (1, 0), (float("nan"), 1000), (1, -5)])
def test_rate_rejects_malformed_values(tokens: float, interval_ms: int) -> None:
    with pytest.raises(InvalidConfigError):
        Rate(tokens, interval_ms)


def test_zero_token_rate_is_allowed() -> None:
    assert Rate(0, 1000).to_wire() == {"tokens": 0, "intervalMs": 1000}  # J-148: blocks forever


def test_backoff_wire_forms() -> None:
    # J-100: stored JSON keeps camelCase
    assert FixedBackoff(30_000, jitter=True).to_wire() == {"kind": "fixed", "delayMs": 30_000, "jitter": True}
    assert ExponentialBackoff().to_wire() == {
        "kind": "exponential",
        "baseMs": 1000,
        "factor": 2,
        "maxMs": 3_600_000,
        "jitter": True,
    }


def test_backoff_from_mappings_in_either_spelling() -> None:
    assert backoff_from({"kind": "fixed", "delayMs": 5}) == FixedBackoff(5, jitter=False)
    assert backoff_from({"kind": "fixed", "delay_ms": 5, "jitter": True}) == FixedBackoff(5, jitter=True)
    # J-100: a backoff object without jitter means no jitter
    assert backoff_from({"kind": "exponential", "base_ms": 500}) == ExponentialBackoff(500, jitter=False)


@pytest.mark.parametrize(
    "value",
    [
        {"kind": "linear", "delayMs": 5},
        {"kind": "fixed"},
        {"kind": "fixed", "delayMs": -1},
        {"kind": "exponential", "factor": 0},
        {"kind": "fixed", "delayMs": 1, "extra": 2},
        "fixed",
    ],
)
def test_malformed_backoff_is_rejected(value: object) -> None:
    with pytest.raises(InvalidConfigError):
        backoff_from(value)  # type: ignore[arg-type]


def test_binding_config_with_only_shards_sends_no_settings() -> None:
    # J-50: only policy / retention produce a settings object
    assert BindingConfig(shards=4).settings_wire() == {}
    assert BindingConfig().sweep_after_ms == 300_000
    assert BindingConfig().failed_retention_ms == 604_800_000


def test_binding_config_settings_wire() -> None:
    config = binding_config_from(
        {"policy": {"concurrency": 5}, "sweep_after_ms": 60_000, "failedRetentionMs": 1}
    )
    settings = config.settings_wire()
    assert settings["policy"]["concurrency"] == 5
    assert settings["sweepAfterMs"] == 60_000 and settings["failedRetentionMs"] == 1


@pytest.mark.parametrize("value", [{"shards": 0}, {"shards": "2"}, {"sweep_after_ms": -1}, {"unknown": 1}])
def test_binding_config_rejects_malformed_values(value: dict[str, object]) -> None:
    with pytest.raises(InvalidConfigError):
        binding_config_from(value)


def test_policy_from_partial_mapping_fills_defaults() -> None:
    policy = policy_from({"perKeyConcurrency": 3, "agingIntervalMs": None})
    assert policy == Policy(per_key_concurrency=3, aging_interval_ms=None)


def test_per_key_override_mappings_go_on_the_wire() -> None:
    # ADR-0056: wire names shared with the shard's policy module
    policy = Policy(
        per_key_concurrency_overrides={"vip": 5},
        per_key_rate_overrides={"vip": Rate(50, 1000), "free": None},
    )
    wire = policy.to_wire()
    assert wire["perKeyConcurrencyOverrides"] == {"vip": 5}
    assert wire["perKeyRateOverrides"] == {"vip": {"tokens": 50, "intervalMs": 1000}, "free": None}


def test_per_key_override_functions_are_evaluated_for_the_given_keys() -> None:
    policy = Policy(
        per_key_concurrency_overrides=lambda key: 4 if key.startswith("vip") else None,
        per_key_rate_overrides=lambda key: {"tokens": 2, "interval_ms": 10} if key == "vip-1" else None,
    )
    assert policy.has_override_functions
    wire = policy.to_wire(["vip-1", "free-1"])
    assert wire["perKeyConcurrencyOverrides"] == {"vip-1": 4}  # None means: the shared value
    assert wire["perKeyRateOverrides"] == {"vip-1": {"tokens": 2, "intervalMs": 10}}
    assert "perKeyConcurrencyOverrides" not in policy.to_wire([])


def test_malformed_override_is_rejected() -> None:
    with pytest.raises(InvalidConfigError):
        Policy(per_key_concurrency_overrides={"k": -1})
    with pytest.raises(InvalidConfigError):
        Policy(per_key_concurrency_overrides=lambda key: -1).to_wire(["k"])
    with pytest.raises(InvalidConfigError):
        Policy(per_key_rate_overrides=5)  # type: ignore[arg-type]


def test_on_settled_validates_states() -> None:
    # J-180a: required, non-empty subset of the terminal states
    assert OnSettled("Notify", ["COMPLETED", "FAILED"]).to_wire() == {
        "binding": "Notify",
        "states": ["COMPLETED", "FAILED"],
    }
    with pytest.raises(InvalidConfigError, match="must not be empty"):
        OnSettled("Notify", [])
    with pytest.raises(InvalidConfigError, match="RUNNING"):
        OnSettled("Notify", ["RUNNING"])
    with pytest.raises(InvalidConfigError):
        OnSettled("Notify", "COMPLETED")


def test_sweep_options_and_run_settings_defaults() -> None:
    # §10.4, §10.5
    assert SweepOptions() == SweepOptions(older_than_ms=604_800_000, limit=1_000)
    assert SweepOptions(1, 2).to_wire() == {"olderThanMs": 1, "limit": 2}
    assert RunSettings().to_wire() == {
        "maxNodes": 10_000,
        "maxDepth": 3,
        "sweepAfterMs": 300_000,
        "failedRetentionMs": 604_800_000,
    }
    with pytest.raises(InvalidConfigError):
        SweepOptions(limit=-1)
    with pytest.raises(InvalidConfigError):
        RunSettings(max_depth=-1)
