"""Retry timing after a failure: fixed or exponential backoff with equal jitter."""
# J-100..J-104

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

# J-100: the default when an enqueue gives no backoff.
DEFAULT_BACKOFF: Final[dict[str, Any]] = {
    "kind": "exponential",
    "baseMs": 1000,
    "factor": 2,
    "maxMs": 3_600_000,
    "jitter": True,
}


class NextAttempt(NamedTuple):
    """Either ``exhausted`` (no more attempts) or the ``run_after`` of the retry."""

    exhausted: bool
    run_after: int | None


def js_round(value: float) -> int:
    """JS ``Math.round``: half toward +inf, i.e. ``floor(x + 0.5)``, not banker's rounding."""
    # J-101
    return math.floor(value + 0.5)


def base_delay_ms(attempts: int, backoff: Mapping[str, Any]) -> float:
    """The un-jittered delay after ``attempts`` finished attempts."""
    # J-101
    if backoff.get("kind") == "fixed":
        return float(backoff.get("delayMs", 0))
    base = float(backoff.get("baseMs", DEFAULT_BACKOFF["baseMs"]))
    factor = float(backoff.get("factor", DEFAULT_BACKOFF["factor"]))
    cap = float(backoff.get("maxMs", DEFAULT_BACKOFF["maxMs"]))
    try:
        grown = base * factor ** max(0, attempts - 1)
    except OverflowError:
        grown = math.inf
    return min(grown, cap)


def next_attempt(
    attempts: int,
    max_attempts: int,
    backoff_wire: Mapping[str, Any] | None,
    now_ms: int,
    rand: float = 0.5,
) -> NextAttempt:
    """When to retry after a failure; ``attempts`` is the count after the failure.

    With jitter the delay is uniform in [base/2, base] ("equal jitter"), never 0 for a positive base.
    """
    # J-101
    if attempts >= max_attempts:
        return NextAttempt(True, None)
    backoff = backoff_wire if backoff_wire is not None else DEFAULT_BACKOFF
    base = base_delay_ms(attempts, backoff)
    delay = js_round(base / 2 + rand * base / 2) if backoff.get("jitter") else js_round(base)
    return NextAttempt(False, now_ms + delay)
