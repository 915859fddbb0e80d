"""Enqueue inputs: Python snake_case options -> the camelCase wire input the shard reads.

A bad option raises ``EnqueueError`` (a ``ValueError``) naming it; mutually exclusive options,
``on_enqueue`` defaults and required keys are checked here too.
ADR-0058 records the choices the spec leaves open; ADR-0133 the
bounds: numbers are clamped to what every store holds, keys made well-formed, payloads kept under the
dispatch message limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypedDict

from tsumugi.core import wire_format
from tsumugi.core.config import ExponentialBackoff, FixedBackoff, backoff_from
from tsumugi.core.config_checks import camel_case, is_number
from tsumugi.core.input_bounds import MAX_DURATION_MS, clamp_duration, clamp_instant, clamp_safe, well_formed
from tsumugi.core.json_types import JsonObject
from tsumugi.core.trace import validate_traceparent
from tsumugi.core.wire_format import check_payload_text
from tsumugi.errors import EnqueueError, InvalidConfigError, RequiredKeyError

__all__ = [
    "DEFAULTABLE_OPTIONS",
    "OPTION_NAMES",
    "EnqueueInput",
    "EnqueueOptions",
    "OnEnqueue",
    "ThrottleOptions",
    "apply_defaults",
    "check_keyed_options",
    "check_required_keys",
    "input_from",
    "to_wire_input",
]


class ThrottleOptions(TypedDict, total=False):
    """``throttle=``: ``tokens`` jobs per ``interval_ms`` for one ``throttle_key`` (ADR-0150)."""

    tokens: int
    interval_ms: int
    on_excess: Literal["delay", "drop"]


class EnqueueOptions(TypedDict, total=False):
    """The job options of one enqueue, as keywords; None means "not given"."""

    priority: float | None
    max_attempts: int | None
    backoff: FixedBackoff | ExponentialBackoff | Mapping[str, object] | None
    timeout_ms: int | None
    delay_ms: int | None
    run_at: int | None
    guarantee: Literal["at-least-once", "at-most-once"] | None
    concurrency_key: str | None
    unique_key: str | None
    unique_for_ms: int | None
    partition_key: str | None
    traceparent: str | None
    expires_at: int | None
    expires_in_ms: int | None
    debounce_key: str | None
    debounce_ms: int | None
    debounce_max_ms: int | None
    throttle_key: str | None
    throttle: ThrottleOptions | Mapping[str, object] | None


class EnqueueInput(EnqueueOptions, total=False):
    """One job to enqueue, as ``enqueue_many`` takes it (camelCase spellings are accepted too)."""

    binding: str
    payload: object


OnEnqueue = Callable[[dict[str, object]], "Mapping[str, object] | None"]

# J-38: id/run_id/node_id are internal (the Run coordinator's node jobs), accepted but undocumented.
OPTION_NAMES: Final = (
    "binding",
    "payload",
    "priority",
    "max_attempts",
    "backoff",
    "timeout_ms",
    "delay_ms",
    "run_at",
    "guarantee",
    "concurrency_key",
    "unique_key",
    "unique_for_ms",
    "partition_key",
    "traceparent",
    "expires_at",
    "expires_in_ms",
    "debounce_key",
    "debounce_ms",
    "debounce_max_ms",
    "throttle_key",
    "throttle",
    "id",
    "run_id",
    "node_id",
)
# J-42: what on_enqueue may default; binding, payload, unique_*, partition_key never.
DEFAULTABLE_OPTIONS: Final = frozenset(
    {
        "traceparent",
        "priority",
        "max_attempts",
        "backoff",
        "timeout_ms",
        "guarantee",
        "delay_ms",
        "run_at",
        "expires_at",
        "expires_in_ms",
        "concurrency_key",
    }
)
_EXCLUSIVE_PAIRS: Final = (("run_at", "delay_ms"), ("expires_at", "expires_in_ms"))
_GUARANTEES: Final = frozenset({"at-least-once", "at-most-once"})
_SPELLINGS: Final = {**{n: n for n in OPTION_NAMES}, **{camel_case(n): n for n in OPTION_NAMES}}
_WIRE_NAMES: Final = {n: camel_case(n) for n in OPTION_NAMES}
_STRING_OPTIONS: Final = (
    "concurrency_key",
    "unique_key",
    "partition_key",
    "debounce_key",
    "throttle_key",
    "id",
    "run_id",
    "node_id",
)


def input_from(value: Mapping[str, object]) -> dict[str, object]:
    """Snake_case options from a mapping; None means absent; unknown names are an error."""
    # J-28
    if not isinstance(value, Mapping):
        raise EnqueueError(f"an enqueue input must be a mapping, got {type(value).__name__}")
    options: dict[str, object] = {}
    for key, item in value.items():
        name = _SPELLINGS.get(key)
        if name is None:
            raise EnqueueError(f"unknown enqueue option: {key!r}")
        if name in options:
            raise EnqueueError(f"enqueue option {name!r} is given twice")
        if item is not None or name == "payload":
            options[name] = item
    return options


def apply_defaults(options: dict[str, object], on_enqueue: OnEnqueue | None) -> dict[str, object]:
    """Fill unset defaultable options from ``on_enqueue(input)``; the caller always wins."""
    # J-42
    if on_enqueue is None:
        return options
    given = on_enqueue(dict(options))
    if not given:
        return options
    defaults = input_from(given)
    merged = dict(options)
    for first, second in _EXCLUSIVE_PAIRS:
        if first in options or second in options:
            # J-42 [INF]: a caller-set member of an exclusive pair shadows the defaults of both.
            defaults.pop(first, None)
            defaults.pop(second, None)
    for name, item in defaults.items():
        if name in DEFAULTABLE_OPTIONS and name not in merged:
            merged[name] = item
    return merged


def check_required_keys(binding: str, options: Mapping[str, object], required: frozenset[str]) -> None:
    """Raise ``RequiredKeyError`` (a TypeError) when a declared key is missing."""
    # J-70
    for key in sorted(required):
        if options.get(key) is None:
            raise RequiredKeyError(f"{binding} requires {key}")


def to_wire_input(options: Mapping[str, object]) -> dict[str, Any]:
    """Validate and convert to the wire input; ``partitionKey`` stays (routing drops it).

    The values are ``Any`` for the callers, which read ``partitionKey`` as routing's ``str | None``;
    the wire is built as ``dict[str, object]`` (the payload is the user's).
    """
    # J-29
    if "binding" not in options:
        raise EnqueueError("binding is required")
    if "payload" not in options:
        raise EnqueueError("payload is required")
    check_payload(options["payload"])
    for first, second in _EXCLUSIVE_PAIRS:
        if first in options and second in options:
            raise EnqueueError(f"{first} and {second} are mutually exclusive")
    check_keyed_options(options)
    wire: dict[str, object] = {}
    for name, item in options.items():
        checker = _CHECKS.get(name)
        wire[_WIRE_NAMES[name]] = checker(name, item) if checker else item
    return wire


def check_payload(payload: object) -> None:
    """Raise ``EnqueueError`` unless ``payload`` serialises to JSON within the size limit.

    ``PayloadTooLargeError`` (an ``EnqueueError``) when the JSON is over ``MAX_PAYLOAD_BYTES`` (ADR-0133).
    """
    # J-27
    try:
        text = wire_format.dumps(payload)  # J-27: the shard stores JSON(payload)
    except (TypeError, ValueError, RecursionError) as error:
        raise EnqueueError(f"payload must be JSON-serializable: {error}") from None
    check_payload_text(text)


def _number(name: str, value: object) -> float:
    if not is_number(value):
        raise EnqueueError(f"{name} must be a finite number, got {value!r}")
    return value


def _priority(name: str, value: object) -> float:
    return clamp_safe(_number(name, value))  # ADR-0133: priorities beyond 2^53 order as 2^53 - 1


def _instant(name: str, value: object) -> float:
    return clamp_instant(_number(name, value))  # ADR-0133: within what a JS Date holds


def _window(name: str, value: object) -> float:
    return clamp_duration(_number(name, value))  # unique_for_ms: any finite number, clamped


def _non_negative(name: str, value: object) -> float:
    if not is_number(value) or value < 0:
        raise EnqueueError(f"{name} must be a number >= 0, got {value!r}")
    return clamp_duration(value)  # ADR-0133: now + the duration stays an instant


def _max_attempts(name: str, value: object) -> int:
    if not is_number(value) or not float(value).is_integer() or value < 1:
        raise EnqueueError(f"max_attempts must be an integer >= 1, got {value!r}")
    return int(clamp_safe(value))  # ADR-0133: more attempts than 2^53 - 1 is as many


def _positive(name: str, value: object) -> float:
    if not is_number(value) or value <= 0:
        raise EnqueueError(f"{name} must be positive, got {value!r}")
    return clamp_duration(value)


def _string(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise EnqueueError(f"{name} must be a string, got {value!r}")
    return well_formed(value)  # ADR-0133: a lone surrogate is stored as U+FFFD, as the Workers runtime does


def _guarantee(name: str, value: object) -> object:
    if value not in _GUARANTEES:
        raise EnqueueError(f"guarantee must be 'at-least-once' or 'at-most-once', got {value!r}")
    return value


_BACKOFF_DURATIONS: Final = ("delayMs", "baseMs", "maxMs")
_NUMBER_TYPES: Final = (int, float)  # a tuple: ``int | float`` builds a union object at every call


def _backoff(name: str, value: object) -> JsonObject:
    try:
        wire = backoff_from(value).to_wire()
    except InvalidConfigError as error:
        raise EnqueueError(str(error)) from None
    # ADR-0133: a retry lands at now + the delay, which must stay an instant.
    return {
        key: min(item, MAX_DURATION_MS)
        if key in _BACKOFF_DURATIONS and isinstance(item, _NUMBER_TYPES)
        else item
        for key, item in wire.items()
    }


# ADR-0149: a debounced job's time is the window's, and its key is its identity, so these go alone.
_DEBOUNCE_EXCLUDES: Final = ("unique_key", "run_at", "delay_ms", "throttle_key", "id")


def check_keyed_options(options: Mapping[str, object]) -> None:
    """Debounce and throttle options come with their key and go without the options they exclude."""
    for option in ("debounce_ms", "debounce_max_ms"):
        if option in options and "debounce_key" not in options:
            raise EnqueueError(f"{option} needs debounce_key")
    if "debounce_key" in options:
        if "debounce_ms" not in options:
            raise EnqueueError("debounce_key needs debounce_ms")
        for other in _DEBOUNCE_EXCLUDES:
            if other in options:
                raise EnqueueError(f"debounce_key and {other} are mutually exclusive")
    if ("throttle" in options) != ("throttle_key" in options):
        raise EnqueueError("throttle_key and throttle go together")


_THROTTLE_FIELDS: Final = {"tokens": "tokens", "interval_ms": "interval_ms", "intervalMs": "interval_ms",
                           "on_excess": "on_excess", "onExcess": "on_excess"}  # fmt: skip


def _throttle(name: str, value: object) -> JsonObject:
    """``{tokens, interval_ms, on_excess}`` (camelCase accepted) -> ``{tokens, intervalMs, onExcess}``."""
    if not isinstance(value, Mapping):
        raise EnqueueError(f"throttle must be a mapping of tokens, interval_ms and on_excess, got {value!r}")
    fields: dict[str, object] = {}
    for key, item in value.items():
        field = _THROTTLE_FIELDS.get(key)
        if field is None:
            raise EnqueueError(f"unknown throttle field: {key!r}")
        fields[field] = item
    tokens = fields.get("tokens")
    if not is_number(tokens) or not float(tokens).is_integer() or tokens < 1:
        raise EnqueueError(f"throttle tokens must be an integer >= 1, got {tokens!r}")
    interval = fields.get("interval_ms")
    if not is_number(interval) or interval <= 0:
        raise EnqueueError(f"throttle interval_ms must be positive, got {interval!r}")
    on_excess = fields.get("on_excess", "delay")
    if on_excess not in ("delay", "drop"):
        raise EnqueueError(f"throttle on_excess must be 'delay' or 'drop', got {on_excess!r}")
    return {
        "tokens": int(clamp_safe(tokens)),
        "intervalMs": int(clamp_duration(interval)),
        "onExcess": on_excess,
    }


_CHECKS: Final[dict[str, Callable[[str, object], object]]] = {
    "binding": _string,
    "priority": _priority,
    "max_attempts": _max_attempts,
    "backoff": _backoff,
    "timeout_ms": _non_negative,
    "delay_ms": _non_negative,
    "run_at": _instant,
    "guarantee": _guarantee,
    "unique_for_ms": _window,
    "traceparent": lambda _name, value: validate_traceparent(value),  # J-40
    "expires_at": _instant,
    "expires_in_ms": _positive,
    "debounce_ms": _positive,
    "debounce_max_ms": _positive,
    "throttle": _throttle,
    **{name: _string for name in _STRING_OPTIONS},
}
