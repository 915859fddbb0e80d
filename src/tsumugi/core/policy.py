"""A shard's settings on the wire: policy, retention and notice targets (ADR-0044, ADR-0157).

The wire keeps the original camelCase. The policy read here is the same ``Policy`` users build
(``core.config_policy``), so stored and carried settings pass the same checks. Per-key overrides are this
port's addition: ``perKeyConcurrencyOverrides: {key: int}`` and
``perKeyRateOverrides: {key: {tokens, intervalMs} | null}``; the single ``perKeyConcurrency``/``perKeyRate``
stay the default for keys without an override.
"""
# J-147, J-51, J-175, J-176, J-1

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from tsumugi.core.config_checks import is_number
from tsumugi.core.config_policy import OnSettled, Policy, Rate
from tsumugi.core.defaults import (
    DEFAULT_CONCURRENCY,
    DEFAULT_FAILED_RETENTION_MS,
    DEFAULT_PER_KEY_CONCURRENCY,
    DEFAULT_REAPER_GRACE_MS,
    DEFAULT_SWEEP_AFTER_MS,
)
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue

__all__ = [
    "NOTICE_STATES",
    "OnSettled",
    "Policy",
    "Rate",
    "ShardSettings",
    "merge_policy",
    "policy_from_wire",
    "rate_from_wire",
    "settings_from_wire",
]

NOTICE_STATES: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED", "STALLED"})
_INT_INPUTS: Final = (int, float, str)  # a tuple: ``int | float | str`` builds a union object at every call

# Fields where null means "the default"; agingIntervalMs is not one of them (null disables aging).
_PLAIN_FIELDS: Final[Mapping[str, tuple[str, JsonValue]]] = {
    "concurrency": ("concurrency", DEFAULT_CONCURRENCY),
    "perKeyConcurrency": ("per_key_concurrency", DEFAULT_PER_KEY_CONCURRENCY),
    "reaperGraceMs": ("reaper_grace_ms", DEFAULT_REAPER_GRACE_MS),
    "paused": ("paused", False),
}


def rate_from_wire(value: JsonValue) -> Rate | None:
    """``{tokens, intervalMs}`` or null."""
    # J-148
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"rate must be an object or null: {value!r}")
    tokens, interval_ms = value["tokens"], value["intervalMs"]
    if not is_number(tokens) or not is_number(interval_ms):
        raise ValueError(f"rate tokens and intervalMs must be numbers: {value!r}")
    return Rate(tokens=tokens, interval_ms=interval_ms)


def _object_or_empty(name: str, value: JsonValue) -> JsonMapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be an object or null: {value!r}")
    return value


def _apply(policy: Policy, wire: JsonMapping) -> Policy:
    """Overlay the wire fields present in ``wire``; None means default except where null is a value."""
    # Any: the values are wire values, checked by Policy.__post_init__, which replace() runs again.
    changes: dict[str, Any] = {}
    for wire_key, (attr, default) in _PLAIN_FIELDS.items():
        if wire_key in wire:
            value = wire[wire_key]
            changes[attr] = default if value is None else value
    if "rate" in wire:
        changes["rate"] = rate_from_wire(wire["rate"])
    if "perKeyRate" in wire:
        changes["per_key_rate"] = rate_from_wire(wire["perKeyRate"])
    if "agingIntervalMs" in wire:  # null disables aging (seed page), so it is a value, not "default"
        changes["aging_interval_ms"] = wire["agingIntervalMs"]
    if "perKeyConcurrencyOverrides" in wire:
        limits = _object_or_empty("perKeyConcurrencyOverrides", wire["perKeyConcurrencyOverrides"])
        changes["per_key_concurrency_overrides"] = dict(limits)
    if "perKeyRateOverrides" in wire:
        rates = _object_or_empty("perKeyRateOverrides", wire["perKeyRateOverrides"])
        changes["per_key_rate_overrides"] = {key: rate_from_wire(rate) for key, rate in rates.items()}
    return replace(policy, **changes) if changes else policy  # replace() runs Policy's checks again


_DEFAULT_POLICY: Final = Policy()  # frozen, so shared: the defaults are checked once, not per read


def policy_from_wire(wire: JsonMapping | None) -> Policy:
    """Defaults overlaid with the given fields: omitted fields revert to defaults."""
    # J-51
    return _apply(_DEFAULT_POLICY, wire or {})


def merge_policy(policy: Policy, patch: JsonMapping) -> Policy:
    """Change only the fields given in ``patch``."""
    # J-176
    return _apply(policy, patch)


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """Policy, retention and notice targets of a shard."""

    # J-50, J-51, J-180

    policy: Policy = field(default_factory=Policy)
    sweep_after_ms: int = DEFAULT_SWEEP_AFTER_MS
    failed_retention_ms: int = DEFAULT_FAILED_RETENTION_MS
    on_failure: str | None = None
    on_settled: OnSettled | None = None

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {
            "policy": self.policy.to_stored_wire(),
            "sweepAfterMs": self.sweep_after_ms,
            "failedRetentionMs": self.failed_retention_ms,
        }
        if self.on_failure is not None:
            wire["onFailure"] = self.on_failure
        if self.on_settled is not None:
            states: list[JsonValue] = [state for state in sorted(self.on_settled.states)]
            wire["onSettled"] = {"binding": self.on_settled.binding, "states": states}
        return wire


def _retention_ms(value: JsonValue, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, _INT_INPUTS):  # what int() takes, as before the wire was typed
        return int(value)
    raise TypeError(f"a retention must be a number of milliseconds, got {value!r}")


def _on_settled_from_wire(value: JsonValue) -> OnSettled | None:
    if not value:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"onSettled must be an object: {value!r}")
    binding, states = value["binding"], value["states"]
    if not isinstance(binding, str) or not isinstance(states, list | tuple | set | frozenset):
        raise ValueError(f"onSettled needs a binding name and a list of states: {value!r}")
    # Unknown states are dropped, not refused: the client checked them against its own list.
    return OnSettled(binding, [s for s in states if isinstance(s, str) and s in NOTICE_STATES])


def settings_from_wire(wire: JsonMapping | None) -> ShardSettings:
    """Replace-semantics settings: every omitted field takes its default."""
    # J-51
    wire = wire or {}
    policy = wire.get("policy")
    on_failure = wire.get("onFailure")
    if on_failure is not None and not isinstance(on_failure, str):
        raise ValueError(f"onFailure must be a binding name or null: {on_failure!r}")
    return ShardSettings(
        policy=policy_from_wire(_object_or_empty("policy", policy)),
        sweep_after_ms=_retention_ms(wire.get("sweepAfterMs"), DEFAULT_SWEEP_AFTER_MS),
        failed_retention_ms=_retention_ms(wire.get("failedRetentionMs"), DEFAULT_FAILED_RETENTION_MS),
        on_failure=on_failure,
        on_settled=_on_settled_from_wire(wire.get("onSettled")),
    )
