"""User-facing execution limits: ``Rate`` and ``Policy`` with their wire forms (ADR-0056).

Per-key overrides travel as ``perKeyConcurrencyOverrides`` and ``perKeyRateOverrides`` mappings (the
names the shard's ``core.policy`` reads); a function form is resolved client-side for the keys being
enqueued.
"""
# §10.3, J-147

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from tsumugi.core.config_checks import (
    check_bool,
    check_count,
    check_duration,
    check_number,
    check_positive_number,
    from_mapping,
)
from tsumugi.errors import InvalidConfigError

__all__ = ["Override", "Policy", "Rate", "policy_from", "rate_from"]

_T = TypeVar("_T")
Override = Mapping[str, _T] | Callable[[str], _T | None]


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket: ``tokens`` per ``interval_ms``. Zero tokens block for good."""

    # J-148

    tokens: float
    interval_ms: int

    def __post_init__(self) -> None:
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int | float):
            raise InvalidConfigError(f"rate.tokens must be a number, got {self.tokens!r}")
        if not math.isfinite(self.tokens) or self.tokens < 0:
            raise InvalidConfigError(f"rate.tokens must be a finite number >= 0, got {self.tokens!r}")
        check_positive_number("rate.interval_ms", self.interval_ms)

    def to_wire(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "intervalMs": self.interval_ms}


def rate_from(value: Rate | Mapping[str, Any] | None, name: str = "rate") -> Rate | None:
    """A ``Rate`` from a ``Rate``, a mapping (``interval_ms`` or ``intervalMs``) or None."""
    if value is None or isinstance(value, Rate):
        return value
    if isinstance(value, Mapping):
        kwargs = from_mapping(name, value, ("tokens", "interval_ms"))
        if set(kwargs) != {"tokens", "interval_ms"}:
            raise InvalidConfigError(f"{name} needs tokens and interval_ms")
        return Rate(**kwargs)
    raise InvalidConfigError(f"{name} must be a Rate, a mapping or None, got {value!r}")


@dataclass(frozen=True, slots=True)
class Policy:
    """Execution limits of one binding's shards; every field has the documented default."""

    concurrency: int = 100
    per_key_concurrency: int = 1
    rate: Rate | None = None
    per_key_rate: Rate | None = None
    aging_interval_ms: int | None = 60_000
    reaper_grace_ms: int = 30_000
    paused: bool = False
    # ADR-0056: per-key overrides, a mapping or a function of the key (None = use the shared value).
    per_key_concurrency_overrides: Override[int] | None = None
    per_key_rate_overrides: Override[Rate] | None = None

    def __post_init__(self) -> None:
        check_count("policy.concurrency", self.concurrency)
        check_count("policy.per_key_concurrency", self.per_key_concurrency)
        object.__setattr__(self, "rate", rate_from(self.rate, "policy.rate"))
        object.__setattr__(self, "per_key_rate", rate_from(self.per_key_rate, "policy.per_key_rate"))
        if self.aging_interval_ms is not None:
            check_number("policy.aging_interval_ms", self.aging_interval_ms)
        check_duration("policy.reaper_grace_ms", self.reaper_grace_ms)
        check_bool("policy.paused", self.paused)
        self._check_overrides()

    def _check_overrides(self) -> None:
        concurrency = self.per_key_concurrency_overrides
        if isinstance(concurrency, Mapping):
            for key, limit in concurrency.items():
                check_count(f"policy.per_key_concurrency_overrides[{key!r}]", limit)
        elif concurrency is not None and not callable(concurrency):
            raise InvalidConfigError("policy.per_key_concurrency_overrides must be a mapping or a function")
        rates = self.per_key_rate_overrides
        if isinstance(rates, Mapping):
            converted = {
                str(key): rate_from(rate, f"policy.per_key_rate_overrides[{key!r}]")
                for key, rate in rates.items()
            }
            object.__setattr__(self, "per_key_rate_overrides", converted)
        elif rates is not None and not callable(rates):
            raise InvalidConfigError("policy.per_key_rate_overrides must be a mapping or a function")

    @property
    def has_override_functions(self) -> bool:
        """True when an override can only be resolved per enqueued key (ADR-0056)."""
        return callable(self.per_key_concurrency_overrides) or callable(self.per_key_rate_overrides)

    def to_wire(self, keys: Iterable[str] = ()) -> dict[str, Any]:
        """The stored ``policy`` object; function overrides are evaluated for ``keys`` (ADR-0056)."""
        wire: dict[str, Any] = {
            "concurrency": self.concurrency,
            "perKeyConcurrency": self.per_key_concurrency,
            "rate": self.rate.to_wire() if self.rate else None,
            "perKeyRate": self.per_key_rate.to_wire() if self.per_key_rate else None,
            "agingIntervalMs": self.aging_interval_ms,
            "reaperGraceMs": self.reaper_grace_ms,
            "paused": self.paused,
        }
        keys = tuple(keys)
        concurrency = _resolve_overrides(self.per_key_concurrency_overrides, keys, "concurrency")
        if concurrency:
            wire["perKeyConcurrencyOverrides"] = concurrency
        rates = _resolve_overrides(self.per_key_rate_overrides, keys, "rate")
        if rates:
            # A mapping's None means "no rate for this key" (null on the wire); a function's None was skipped.
            wire["perKeyRateOverrides"] = {
                key: rate.to_wire() if rate else None for key, rate in rates.items()
            }
        return wire


def _resolve_overrides(overrides: Override[Any] | None, keys: tuple[str, ...], what: str) -> dict[str, Any]:
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    resolved: dict[str, Any] = {}
    for key in keys:
        value = overrides(key)
        if value is None:
            continue
        if what == "concurrency":
            check_count(f"per_key_concurrency_overrides({key!r})", value)
        else:
            value = rate_from(value, f"per_key_rate_overrides({key!r})")
        resolved[key] = value
    return resolved


def policy_from(value: Policy | Mapping[str, Any] | None) -> Policy | None:
    """A ``Policy`` from an object, a (partial) mapping in snake_case or camelCase, or None."""
    if value is None or isinstance(value, Policy):
        return value
    if isinstance(value, Mapping):
        return Policy(**from_mapping("policy", value, Policy.__dataclass_fields__))
    raise InvalidConfigError(f"policy must be a Policy, a mapping or None, got {value!r}")
