"""The one model of a shard's execution limits and notices: ``Rate``, ``Policy``, ``OnSettled`` (ADR-0157).

Users build them (``define_tsumugi``, ``update_policy``) and the shard reads its stored settings into the
same classes (``core.policy``), so a value is checked by one constructor wherever it comes from.
Per-key overrides travel as ``perKeyConcurrencyOverrides`` and ``perKeyRateOverrides`` mappings; a function
form is resolved client-side for the keys being enqueued (ADR-0056).
"""
# §10.3, J-147

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias, TypeVar

from tsumugi.core.config_checks import (
    check_bool,
    check_count,
    check_duration,
    check_number,
    check_positive_number,
    from_mapping,
)
from tsumugi.core.defaults import (
    DEFAULT_AGING_INTERVAL_MS,
    DEFAULT_CONCURRENCY,
    DEFAULT_PER_KEY_CONCURRENCY,
    DEFAULT_REAPER_GRACE_MS,
)
from tsumugi.core.json_types import JsonObject, JsonValue
from tsumugi.core.states import TERMINAL_STATES
from tsumugi.errors import InvalidConfigError

__all__ = ["OnSettled", "Override", "Policy", "Rate", "policy_from", "rate_from"]

_T = TypeVar("_T")
_NUMBER_TYPES: Final = (int, float)  # a tuple: ``int | float`` builds a union object at every call
Override: TypeAlias = Mapping[str, _T] | Callable[[str], _T | None]


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket: ``tokens`` per ``interval_ms``. Zero tokens block for good."""

    # J-148

    tokens: float
    interval_ms: float

    def __post_init__(self) -> None:
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, _NUMBER_TYPES):
            raise InvalidConfigError(f"rate.tokens must be a number, got {self.tokens!r}")
        if not math.isfinite(self.tokens) or self.tokens < 0:
            raise InvalidConfigError(f"rate.tokens must be a finite number >= 0, got {self.tokens!r}")
        check_positive_number("rate.interval_ms", self.interval_ms)

    def to_wire(self) -> JsonObject:
        return {"tokens": self.tokens, "intervalMs": self.interval_ms}


def rate_from(value: Rate | Mapping[str, object] | None, name: str = "rate") -> Rate | None:
    """A ``Rate`` from a ``Rate``, a mapping (``interval_ms`` or ``intervalMs``) or None."""
    if value is None or isinstance(value, Rate):
        return value
    if isinstance(value, Mapping):
        kwargs = from_mapping(name, value, ("tokens", "interval_ms"))
        if set(kwargs) != {"tokens", "interval_ms"}:
            raise InvalidConfigError(f"{name} needs tokens and interval_ms")
        return Rate(**kwargs)
    raise InvalidConfigError(f"{name} must be a Rate, a mapping or None, got {value!r}")


def _rate_wire(rate: Rate | None) -> JsonValue:
    return rate.to_wire() if rate else None


def _limits_wire(limits: Mapping[str, int]) -> JsonObject:
    return dict(limits)


@dataclass(frozen=True, slots=True)
class Policy:
    """Execution limits of one binding's shards; every field has the documented default.

    An override mapping that is empty is stored as None: both mean "no overrides".
    """

    concurrency: int = DEFAULT_CONCURRENCY
    per_key_concurrency: int = DEFAULT_PER_KEY_CONCURRENCY
    rate: Rate | None = None
    per_key_rate: Rate | None = None
    aging_interval_ms: int | None = DEFAULT_AGING_INTERVAL_MS
    reaper_grace_ms: int = DEFAULT_REAPER_GRACE_MS
    paused: bool = False
    # ADR-0056: per-key overrides, a mapping or a function of the key (None = use the shared value).
    # In a rate mapping None means "no rate for this key".
    per_key_concurrency_overrides: Override[int] | None = None
    per_key_rate_overrides: Override[Rate | None] | None = None

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
        # None first: the common case, decided without an ABC isinstance (a shard reads settings per enqueue)
        if concurrency is None:
            pass
        elif isinstance(concurrency, Mapping):
            for key, limit in concurrency.items():
                check_count(f"policy.per_key_concurrency_overrides[{key!r}]", limit)
            object.__setattr__(self, "per_key_concurrency_overrides", dict(concurrency) or None)
        elif not callable(concurrency):
            raise InvalidConfigError("policy.per_key_concurrency_overrides must be a mapping or a function")
        rates = self.per_key_rate_overrides
        if rates is None:
            pass
        elif isinstance(rates, Mapping):
            converted = {
                str(key): rate_from(rate, f"policy.per_key_rate_overrides[{key!r}]")
                for key, rate in rates.items()
            }
            object.__setattr__(self, "per_key_rate_overrides", converted or None)
        elif not callable(rates):
            raise InvalidConfigError("policy.per_key_rate_overrides must be a mapping or a function")

    @property
    def has_override_functions(self) -> bool:
        """True when an override can only be resolved per enqueued key (ADR-0056)."""
        return callable(self.per_key_concurrency_overrides) or callable(self.per_key_rate_overrides)

    def key_concurrency(self, key: str) -> int:
        """The concurrency limit of one key: its override, else ``per_key_concurrency``."""
        overrides = self.per_key_concurrency_overrides
        # The scheduler asks once per keyed candidate, so the common case (no overrides) comes first.
        if overrides is None:
            return self.per_key_concurrency
        if callable(overrides):
            limit = overrides(key)
            return self.per_key_concurrency if limit is None else limit
        return overrides.get(key, self.per_key_concurrency)

    def key_rate(self, key: str) -> Rate | None:
        """The rate of one key: its override (a mapping's None means unlimited), else ``per_key_rate``."""
        overrides = self.per_key_rate_overrides
        if overrides is None:
            return self.per_key_rate
        if callable(overrides):
            rate = overrides(key)
            return self.per_key_rate if rate is None else rate
        return overrides[key] if key in overrides else self.per_key_rate

    def to_wire(self, keys: Iterable[str] = ()) -> JsonObject:
        """The ``policy`` object carried to a shard; overrides only when there are some.

        Function overrides are evaluated for ``keys`` (ADR-0056).
        """
        wire = self._fields_wire()
        keys = tuple(keys)
        concurrency = _resolve_concurrency(self.per_key_concurrency_overrides, keys)
        if concurrency:
            wire["perKeyConcurrencyOverrides"] = _limits_wire(concurrency)
        rates = _resolve_rates(self.per_key_rate_overrides, keys)
        if rates:
            # A mapping's None means "no rate for this key" (null on the wire); a function's None was skipped.
            wire["perKeyRateOverrides"] = {key: _rate_wire(rate) for key, rate in rates.items()}
        return wire

    def to_stored_wire(self) -> JsonObject:
        """The ``policy`` object a shard stores and reports: every field, empty overrides included."""
        # J-185
        wire = self._fields_wire()
        limits, rates = self.per_key_concurrency_overrides, self.per_key_rate_overrides
        wire["perKeyConcurrencyOverrides"] = (
            {} if limits is None else _limits_wire(_resolve_concurrency(limits, ()))
        )
        wire["perKeyRateOverrides"] = (
            {}
            if rates is None
            else {key: _rate_wire(rate) for key, rate in _resolve_rates(rates, ()).items()}
        )
        return wire

    def _fields_wire(self) -> JsonObject:
        return {
            "concurrency": self.concurrency,
            "perKeyConcurrency": self.per_key_concurrency,
            "rate": self.rate.to_wire() if self.rate else None,
            "perKeyRate": self.per_key_rate.to_wire() if self.per_key_rate else None,
            "agingIntervalMs": self.aging_interval_ms,
            "reaperGraceMs": self.reaper_grace_ms,
            "paused": self.paused,
        }


def _resolve_concurrency(overrides: Override[int] | None, keys: tuple[str, ...]) -> Mapping[str, int]:
    if overrides is None:
        return {}
    if not callable(overrides):
        return overrides
    resolved: dict[str, int] = {}
    for key in keys:
        limit = overrides(key)
        if limit is not None:
            check_count(f"per_key_concurrency_overrides({key!r})", limit)
            resolved[key] = limit
    return resolved


def _resolve_rates(
    overrides: Override[Rate | None] | None, keys: tuple[str, ...]
) -> Mapping[str, Rate | None]:
    if overrides is None:
        return {}
    if not callable(overrides):
        return overrides
    resolved: dict[str, Rate | None] = {}
    for key in keys:
        rate = overrides(key)
        if rate is not None:
            resolved[key] = rate_from(rate, f"per_key_rate_overrides({key!r})")
    return resolved


def policy_from(value: Policy | Mapping[str, object] | None) -> Policy | None:
    """A ``Policy`` from an object, a (partial) mapping in snake_case or camelCase, or None."""
    if value is None or isinstance(value, Policy):
        return value
    if isinstance(value, Mapping):
        return Policy(**from_mapping("policy", value, Policy.__dataclass_fields__))
    raise InvalidConfigError(f"policy must be a Policy, a mapping or None, got {value!r}")


_NOTICE_STATES = sorted(str(state) for state in TERMINAL_STATES)


@dataclass(frozen=True, slots=True)
class OnSettled:
    """Where settlement notices go and for which terminal states."""

    # J-180a

    binding: str
    states: Sequence[str] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.binding, str) or not self.binding:
            raise InvalidConfigError("on_settled.binding must be a binding name")
        if isinstance(self.states, str) or not isinstance(self.states, Iterable):
            raise InvalidConfigError("on_settled.states must be a list of states")
        states = tuple(str(s) for s in self.states)
        if not states:
            raise InvalidConfigError("on_settled.states must not be empty")
        for state in states:
            if state not in _NOTICE_STATES:
                raise InvalidConfigError(
                    f"on_settled.states: {state!r} is not one of {', '.join(_NOTICE_STATES)}"
                )
        object.__setattr__(self, "states", tuple(dict.fromkeys(states)))

    def to_wire(self) -> JsonObject:
        return {"binding": self.binding, "states": list(self.states)}
