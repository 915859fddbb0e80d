"""Retry timing after a failure: fixed or exponential backoff with equal jitter."""
# J-100..J-104

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, NamedTuple, TypeAlias

from tsumugi.core.defaults import (  # ADR-0157: said once
    DEFAULT_BACKOFF_BASE_MS,
    DEFAULT_BACKOFF_FACTOR,
    DEFAULT_BACKOFF_MAX_MS,
)
from tsumugi.core.json_types import JsonMapping, JsonObject

# J-100: the default when an enqueue gives no backoff.
DEFAULT_BACKOFF: Final[JsonObject] = {
    "kind": "exponential",
    "baseMs": DEFAULT_BACKOFF_BASE_MS,
    "factor": DEFAULT_BACKOFF_FACTOR,
    "maxMs": DEFAULT_BACKOFF_MAX_MS,
    "jitter": True,
}


@dataclass(frozen=True, slots=True)
class Fixed:
    """The same delay after every failure."""

    delay_ms: float
    jitter: bool = False


@dataclass(frozen=True, slots=True)
class Exponential:
    """``min(base_ms * factor ** (attempts - 1), max_ms)``."""

    base_ms: float = DEFAULT_BACKOFF_BASE_MS
    factor: float = DEFAULT_BACKOFF_FACTOR
    max_ms: float = DEFAULT_BACKOFF_MAX_MS
    jitter: bool = False


RetryBackoff: TypeAlias = Fixed | Exponential


def _number(wire: JsonMapping, key: str, default: float) -> float:
    value = wire.get(key, default)
    if isinstance(value, int | float | str):  # a stored backoff was checked at enqueue; float() as before
        return float(value)
    raise TypeError(f"backoff.{key} is not a number: {value!r}")


def backoff_from_wire(wire: JsonMapping | None) -> RetryBackoff:
    """The backoff a job stored (``{kind, delayMs | baseMs, factor, maxMs, jitter}``); None is the default.

    Any kind but ``fixed`` is exponential, a missing field takes the default, a missing ``jitter`` is off.
    """
    if wire is None:
        return DEFAULT
    jitter = bool(wire.get("jitter"))
    if wire.get("kind") == "fixed":
        return Fixed(_number(wire, "delayMs", 0), jitter)
    return Exponential(
        _number(wire, "baseMs", DEFAULT_BACKOFF_BASE_MS),
        _number(wire, "factor", DEFAULT_BACKOFF_FACTOR),
        _number(wire, "maxMs", DEFAULT_BACKOFF_MAX_MS),
        jitter,
    )


DEFAULT: Final = Exponential(jitter=True)  # DEFAULT_BACKOFF, decoded
assert backoff_from_wire(DEFAULT_BACKOFF) == DEFAULT


class NextAttempt(NamedTuple):
    """Either ``exhausted`` (no more attempts) or the ``run_after`` of the retry."""

    exhausted: bool
    run_after: int | None


def js_round(value: float) -> int:
    """JS ``Math.round``: half toward +inf, i.e. ``floor(x + 0.5)``, not banker's rounding."""
    # J-101
    return math.floor(value + 0.5)


def base_delay_ms(attempts: int, backoff: RetryBackoff) -> float:
    """The un-jittered delay after ``attempts`` finished attempts."""
    # J-101
    match backoff:
        case Fixed(delay_ms=delay_ms):
            return delay_ms
        case Exponential(base_ms=base, factor=factor, max_ms=cap):
            try:
                grown = base * factor ** max(0, attempts - 1)
            except OverflowError:
                grown = math.inf
            return min(grown, cap)


def next_retry(
    attempts: int, max_attempts: int, backoff: RetryBackoff, now_ms: int, rand: float = 0.5
) -> NextAttempt:
    """When to retry after a failure; ``attempts`` is the count after the failure.

    With jitter the delay is uniform in [base/2, base] ("equal jitter"), never 0 for a positive base.
    """
    # J-101
    if attempts >= max_attempts:
        return NextAttempt(True, None)
    base = base_delay_ms(attempts, backoff)
    delay = js_round(base / 2 + rand * base / 2) if backoff.jitter else js_round(base)
    return NextAttempt(False, now_ms + delay)


def next_attempt(
    attempts: int,
    max_attempts: int,
    backoff_wire: JsonMapping | None,
    now_ms: int,
    rand: float = 0.5,
) -> NextAttempt:
    """``next_retry`` for a backoff in its wire form (None for the default)."""
    return next_retry(attempts, max_attempts, backoff_from_wire(backoff_wire), now_ms, rand)
