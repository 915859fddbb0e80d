"""User-facing configuration values and their camelCase wire forms.

Each value validates itself when built (``InvalidConfigError``, a ``ValueError``) and converts to the
dict the shard stores, so static configuration is checked once, at ``define_tsumugi`` time.
Per-key overrides (ADR-0056) travel as mappings named ``perKeyConcurrencyOverrides`` and
``perKeyRateOverrides``; a function form is resolved client-side for the keys being enqueued.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from tsumugi.core.config_checks import (
    camel_case,
    check_bool,
    check_count,
    check_duration,
    check_positive_number,
    from_mapping,
)
from tsumugi.core.config_policy import OnSettled, Policy, Rate, policy_from, rate_from
from tsumugi.core.defaults import (
    DEFAULT_BACKOFF_BASE_MS,
    DEFAULT_BACKOFF_FACTOR,
    DEFAULT_BACKOFF_MAX_MS,
    DEFAULT_FAILED_RETENTION_MS,
    DEFAULT_READ_MODEL_RETENTION_MS,
    DEFAULT_SWEEP_AFTER_MS,
    DEFAULT_SWEEP_LIMIT,
)
from tsumugi.core.json_types import JsonObject
from tsumugi.errors import InvalidConfigError

__all__ = [
    "DEFAULT_FAILED_RETENTION_MS",
    "DEFAULT_SWEEP_AFTER_MS",
    "BindingConfig",
    "ExponentialBackoff",
    "FixedBackoff",
    "OnSettled",
    "Policy",
    "Rate",
    "RunSettings",
    "SweepOptions",
    "backoff_from",
    "binding_config_from",
    "policy_from",
    "rate_from",
]


@dataclass(frozen=True, slots=True)
class FixedBackoff:
    """Retry after the same delay every time."""

    # J-100

    delay_ms: int
    jitter: bool = False

    def __post_init__(self) -> None:
        check_duration("backoff.delay_ms", self.delay_ms)
        check_bool("backoff.jitter", self.jitter)

    def to_wire(self) -> JsonObject:
        return {"kind": "fixed", "delayMs": self.delay_ms, "jitter": self.jitter}


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """``min(base_ms * factor ** (attempts - 1), max_ms)``, with equal jitter by default."""

    # J-100, J-101

    base_ms: int = DEFAULT_BACKOFF_BASE_MS
    factor: float = DEFAULT_BACKOFF_FACTOR
    max_ms: int = DEFAULT_BACKOFF_MAX_MS
    jitter: bool = True

    def __post_init__(self) -> None:
        check_duration("backoff.base_ms", self.base_ms)
        check_positive_number("backoff.factor", self.factor)
        check_duration("backoff.max_ms", self.max_ms)
        check_bool("backoff.jitter", self.jitter)

    def to_wire(self) -> JsonObject:
        return {
            "kind": "exponential",
            "baseMs": self.base_ms,
            "factor": self.factor,
            "maxMs": self.max_ms,
            "jitter": self.jitter,
        }


Backoff = FixedBackoff | ExponentialBackoff


_BACKOFF_FIELDS: Final = {
    "fixed": ("delay_ms", "jitter"),
    "exponential": ("base_ms", "factor", "max_ms", "jitter"),
}
_BACKOFF_KEYS: Final = (
    "a fixed backoff takes kind, delay_ms and jitter; "
    "an exponential one kind, base_ms, factor, max_ms and jitter"
)


def backoff_from(value: object) -> Backoff:
    """A backoff from an object or a mapping with ``kind`` (snake_case or camelCase fields)."""
    if isinstance(value, FixedBackoff | ExponentialBackoff):
        return value
    if not isinstance(value, Mapping):
        raise InvalidConfigError(
            f"backoff must be FixedBackoff, ExponentialBackoff or a mapping, got {value!r}"
        )
    rest = {k: v for k, v in value.items() if k != "kind"}
    kind = value.get("kind")
    if kind not in _BACKOFF_FIELDS:
        accepted = {name for names in _BACKOFF_FIELDS.values() for name in names}
        stray = [k for k in rest if k not in accepted and k not in {camel_case(n) for n in accepted}]
        named = f"; unknown key {stray[0]!r}" if stray else ""
        raise InvalidConfigError(
            f"backoff.kind must be 'fixed' or 'exponential', got {kind!r}{named} ({_BACKOFF_KEYS})"
        )
    try:
        kwargs = from_mapping("backoff", rest, _BACKOFF_FIELDS[kind])
    except InvalidConfigError as error:
        raise InvalidConfigError(f"{error} ({_BACKOFF_KEYS})") from None
    if kind == "fixed":
        if "delay_ms" not in kwargs:
            raise InvalidConfigError("a fixed backoff needs delay_ms")
        return FixedBackoff(**kwargs)
    # J-100: a backoff object without jitter means no jitter; other omitted fields take the defaults.
    kwargs.setdefault("jitter", False)
    return ExponentialBackoff(**kwargs)


@dataclass(frozen=True, slots=True)
class BindingConfig:
    """Per-binding configuration; None for a retention field means its default."""

    shards: int = 1
    policy: Policy | None = None
    sweep_after_ms: int = DEFAULT_SWEEP_AFTER_MS
    failed_retention_ms: int = DEFAULT_FAILED_RETENTION_MS

    def __post_init__(self) -> None:
        if isinstance(self.shards, bool) or not isinstance(self.shards, int) or self.shards < 1:
            raise InvalidConfigError(f"shards must be an integer >= 1, got {self.shards!r}")
        object.__setattr__(self, "policy", policy_from(self.policy))
        for name, default in (
            ("sweep_after_ms", DEFAULT_SWEEP_AFTER_MS),
            ("failed_retention_ms", DEFAULT_FAILED_RETENTION_MS),
        ):
            if getattr(self, name) is None:  # J-28: None means "use the default"
                object.__setattr__(self, name, default)
        check_duration("sweep_after_ms", self.sweep_after_ms)
        check_duration("failed_retention_ms", self.failed_retention_ms)

    def settings_wire(self, keys: Iterable[str] = ()) -> JsonObject:
        """``{policy?, sweepAfterMs?, failedRetentionMs?}``; empty when only ``shards`` is set.

        A retention at its default is left out: applying settings replaces them wholesale and an absent
        field reverts to that same default, so leaving it out changes nothing (ADR-0126).
        """
        # J-50, J-51
        wire: JsonObject = {}
        if self.policy is not None:
            wire["policy"] = self.policy.to_wire(keys)
        if self.sweep_after_ms != DEFAULT_SWEEP_AFTER_MS:
            wire["sweepAfterMs"] = self.sweep_after_ms
        if self.failed_retention_ms != DEFAULT_FAILED_RETENTION_MS:
            wire["failedRetentionMs"] = self.failed_retention_ms
        return wire


def binding_config_from(value: BindingConfig | Mapping[str, object] | None) -> BindingConfig:
    if value is None:
        return BindingConfig()
    if isinstance(value, BindingConfig):
        return value
    if isinstance(value, Mapping):
        return BindingConfig(**from_mapping("bindings entry", value, BindingConfig.__dataclass_fields__))
    raise InvalidConfigError(f"a bindings entry must be a BindingConfig or a mapping, got {value!r}")


@dataclass(frozen=True, slots=True)
class SweepOptions:
    """Read-model retention: delete terminal rows older than ``older_than_ms``, ``limit`` a run."""

    older_than_ms: int = DEFAULT_READ_MODEL_RETENTION_MS  # J-172: aligned with failed_retention_ms
    limit: int = DEFAULT_SWEEP_LIMIT

    def __post_init__(self) -> None:
        check_duration("retention.older_than_ms", self.older_than_ms)
        check_count("retention.limit", self.limit)

    def to_wire(self) -> JsonObject:
        return {"olderThanMs": self.older_than_ms, "limit": self.limit}


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Run limits and retention."""

    max_nodes: int = 10_000
    max_depth: int = 3
    sweep_after_ms: int = DEFAULT_SWEEP_AFTER_MS
    failed_retention_ms: int = DEFAULT_FAILED_RETENTION_MS

    def __post_init__(self) -> None:
        check_count("runs.max_nodes", self.max_nodes)
        check_count("runs.max_depth", self.max_depth)
        check_duration("runs.sweep_after_ms", self.sweep_after_ms)
        check_duration("runs.failed_retention_ms", self.failed_retention_ms)

    def to_wire(self) -> JsonObject:
        return {
            "maxNodes": self.max_nodes,
            "maxDepth": self.max_depth,
            "sweepAfterMs": self.sweep_after_ms,
            "failedRetentionMs": self.failed_retention_ms,
        }
