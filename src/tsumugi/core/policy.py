"""Shard policy and settings on the wire, with defaults (ADR-0044).

The wire keeps the original camelCase. Per-key overrides are this port's addition:
``perKeyConcurrencyOverrides: {key: int}`` and ``perKeyRateOverrides: {key: {tokens, intervalMs} | null}``;
the single ``perKeyConcurrency``/``perKeyRate`` stay the default for keys without an override.
"""
# J-147, J-51, J-175, J-176, J-1

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

DEFAULT_CONCURRENCY: Final = 100  # J-147
DEFAULT_PER_KEY_CONCURRENCY: Final = 1  # J-147
DEFAULT_AGING_INTERVAL_MS: Final = 60_000  # J-147: +1 effective priority per minute waited
DEFAULT_REAPER_GRACE_MS: Final = 30_000  # J-147
DEFAULT_SWEEP_AFTER_MS: Final = 300_000  # J-170: COMPLETED/CANCELLED kept 5 minutes
DEFAULT_FAILED_RETENTION_MS: Final = 604_800_000  # J-170: FAILED/STALLED kept 7 days
NOTICE_STATES: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED", "STALLED"})


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket's shape: ``tokens`` per ``interval_ms``."""

    # J-148

    tokens: float
    interval_ms: float

    def to_wire(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "intervalMs": self.interval_ms}


def rate_from_wire(value: Any) -> Rate | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"rate must be an object or null: {value!r}")
    return Rate(tokens=value["tokens"], interval_ms=value["intervalMs"])


@dataclass(frozen=True, slots=True)
class Policy:
    """The execution limits of one shard (spec 10.3)."""

    # J-147

    concurrency: int = DEFAULT_CONCURRENCY
    per_key_concurrency: int = DEFAULT_PER_KEY_CONCURRENCY
    rate: Rate | None = None
    per_key_rate: Rate | None = None
    aging_interval_ms: int | None = DEFAULT_AGING_INTERVAL_MS
    reaper_grace_ms: int = DEFAULT_REAPER_GRACE_MS
    paused: bool = False
    per_key_concurrency_overrides: Mapping[str, int] = field(default_factory=dict)
    per_key_rate_overrides: Mapping[str, Rate | None] = field(default_factory=dict)

    def key_concurrency(self, key: str) -> int:
        """The concurrency limit of one key: its override, else ``per_key_concurrency``."""
        return self.per_key_concurrency_overrides.get(key, self.per_key_concurrency)

    def key_rate(self, key: str) -> Rate | None:
        """The rate of one key: its override (null means unlimited), else ``per_key_rate``."""
        if key in self.per_key_rate_overrides:
            return self.per_key_rate_overrides[key]
        return self.per_key_rate

    def to_wire(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "perKeyConcurrency": self.per_key_concurrency,
            "rate": self.rate.to_wire() if self.rate else None,
            "perKeyRate": self.per_key_rate.to_wire() if self.per_key_rate else None,
            "agingIntervalMs": self.aging_interval_ms,
            "reaperGraceMs": self.reaper_grace_ms,
            "paused": self.paused,
            "perKeyConcurrencyOverrides": dict(self.per_key_concurrency_overrides),
            "perKeyRateOverrides": {
                k: (v.to_wire() if v else None) for k, v in self.per_key_rate_overrides.items()
            },
        }


def _apply(policy: Policy, wire: Mapping[str, Any]) -> Policy:
    """Overlay the wire fields present in ``wire``; None means default except where null is a value."""
    changes: dict[str, Any] = {}
    plain = {
        "concurrency": ("concurrency", DEFAULT_CONCURRENCY),
        "perKeyConcurrency": ("per_key_concurrency", DEFAULT_PER_KEY_CONCURRENCY),
        "reaperGraceMs": ("reaper_grace_ms", DEFAULT_REAPER_GRACE_MS),
        "paused": ("paused", False),
    }
    for wire_key, (attr, default) in plain.items():
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
        changes["per_key_concurrency_overrides"] = dict(wire["perKeyConcurrencyOverrides"] or {})
    if "perKeyRateOverrides" in wire:
        overrides = wire["perKeyRateOverrides"] or {}
        changes["per_key_rate_overrides"] = {k: rate_from_wire(v) for k, v in overrides.items()}
    return replace(policy, **changes)


def policy_from_wire(wire: Mapping[str, Any] | None) -> Policy:
    """Defaults overlaid with the given fields: omitted fields revert to defaults."""
    # J-51
    return _apply(Policy(), wire or {})


def merge_policy(policy: Policy, patch: Mapping[str, Any]) -> Policy:
    """Change only the fields given in ``patch``."""
    # J-176
    return _apply(policy, patch)


@dataclass(frozen=True, slots=True)
class OnSettled:
    binding: str
    states: frozenset[str]


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """Policy, retention and notice targets of a shard."""

    # J-50, J-51, J-180

    policy: Policy = field(default_factory=Policy)
    sweep_after_ms: int = DEFAULT_SWEEP_AFTER_MS
    failed_retention_ms: int = DEFAULT_FAILED_RETENTION_MS
    on_failure: str | None = None
    on_settled: OnSettled | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "policy": self.policy.to_wire(),
            "sweepAfterMs": self.sweep_after_ms,
            "failedRetentionMs": self.failed_retention_ms,
        }
        if self.on_failure is not None:
            wire["onFailure"] = self.on_failure
        if self.on_settled is not None:
            wire["onSettled"] = {
                "binding": self.on_settled.binding,
                "states": sorted(self.on_settled.states),
            }
        return wire


def settings_from_wire(wire: Mapping[str, Any] | None) -> ShardSettings:
    """Replace-semantics settings: every omitted field takes its default."""
    # J-51
    wire = wire or {}
    on_settled = wire.get("onSettled")
    sweep_after_ms = wire.get("sweepAfterMs")
    failed_retention_ms = wire.get("failedRetentionMs")
    return ShardSettings(
        policy=policy_from_wire(wire.get("policy")),
        sweep_after_ms=DEFAULT_SWEEP_AFTER_MS if sweep_after_ms is None else int(sweep_after_ms),
        failed_retention_ms=(
            DEFAULT_FAILED_RETENTION_MS if failed_retention_ms is None else int(failed_retention_ms)
        ),
        on_failure=wire.get("onFailure"),
        on_settled=(
            OnSettled(on_settled["binding"], frozenset(on_settled["states"]) & NOTICE_STATES)
            if on_settled
            else None
        ),
    )
