"""One Policy/Rate/OnSettled model for users and shards, and each default said once (ADR-0157)."""

from __future__ import annotations

import pytest

import tsumugi
from tsumugi.core import config, config_policy, defaults, policy
from tsumugi.core.json_types import JsonMapping
from tsumugi.errors import InvalidConfigError


def test_users_and_the_shard_share_one_class_each() -> None:
    # ADR-0157
    assert tsumugi.Policy is config.Policy is policy.Policy is config_policy.Policy
    assert tsumugi.Rate is config.Rate is policy.Rate is config_policy.Rate
    assert tsumugi.OnSettled is config.OnSettled is policy.OnSettled is config_policy.OnSettled


def test_defaults_come_from_one_place() -> None:
    # J-147, J-170, J-172: the values the spec names, read through every model that uses them
    assert (
        defaults.DEFAULT_CONCURRENCY
        == config.Policy().concurrency
        == policy.policy_from_wire(None).concurrency
    )
    settings = policy.settings_from_wire(None)
    assert settings.failed_retention_ms == config.BindingConfig().failed_retention_ms == 604_800_000
    assert config.RunSettings().failed_retention_ms == defaults.DEFAULT_FAILED_RETENTION_MS
    assert config.SweepOptions().older_than_ms == defaults.DEFAULT_FAILED_RETENTION_MS  # J-172: aligned
    assert settings.sweep_after_ms == config.BindingConfig().sweep_after_ms == 300_000


def test_a_user_policy_reads_back_from_its_wire_as_the_same_value() -> None:
    # J-51, ADR-0044: what a client carries, a shard reads into an equal Policy
    given = config.Policy(
        concurrency=7,
        per_key_concurrency_overrides={"vip": 3},
        per_key_rate_overrides={"free": None, "k": config.Rate(2, 1_000)},
    )
    assert policy.policy_from_wire(given.to_wire()) == given
    assert policy.policy_from_wire(given.to_stored_wire()) == given


def test_the_stored_form_keeps_empty_overrides_and_the_carried_form_leaves_them_out() -> None:
    # J-50, J-185: the carried settings and the reported policy keep their shapes
    assert "perKeyConcurrencyOverrides" not in config.Policy().to_wire()
    stored = config.Policy().to_stored_wire()
    assert stored["perKeyConcurrencyOverrides"] == {} and stored["perKeyRateOverrides"] == {}


def test_a_function_override_is_resolved_per_key_by_the_one_model() -> None:
    # ADR-0056
    limits = config.Policy(
        per_key_concurrency=1, per_key_concurrency_overrides=lambda k: 4 if k == "vip" else None
    )
    assert limits.key_concurrency("vip") == 4 and limits.key_concurrency("x") == 1


@pytest.mark.parametrize(
    "wire",
    [
        {"policy": {"concurrency": -1}},
        {"policy": {"rate": {"tokens": 1, "intervalMs": 0}}},
        {"onSettled": {"binding": "Notify", "states": ["RUNNING"]}},
    ],
)
def test_settings_a_shard_reads_pass_the_same_checks(wire: JsonMapping) -> None:
    # ADR-0157: the shard no longer stores what a user's Policy would refuse
    with pytest.raises(InvalidConfigError):
        policy.settings_from_wire(wire)
