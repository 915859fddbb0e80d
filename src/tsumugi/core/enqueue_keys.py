"""Debounce and throttle at enqueue: the pure decisions (ADR-0149, ADR-0150).

The shard keeps one row per live debounce key (the job it points at, and the latest instant the
window may reach) and one row per throttle key (the theoretical arrival time of the next token, the
GCRA form of a token bucket). These functions decide from those rows and ``now_ms``; the coordinator
applies the decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class DebounceHolder:
    """A debounce key's row: the waiting job it points at and the window's hard end (``max_at``)."""

    job_id: str
    max_at: int | None


def debounced_run_after(now_ms: int, debounce_ms: int, max_at: int | None) -> int:
    """The window's new end: ``now + debounce_ms``, never past ``max_at`` (debounce_max_ms)."""
    run_after = now_ms + debounce_ms
    return run_after if max_at is None else max(now_ms, min(run_after, max_at))


def debounce_max_at(now_ms: int, debounce_max_ms: int | None) -> int | None:
    """The hard end of a window opened now: first enqueue + ``debounce_max_ms``."""
    return None if debounce_max_ms is None else now_ms + debounce_max_ms


@dataclass(frozen=True, slots=True)
class ThrottleRule:
    """``tokens`` jobs per ``interval_ms``, bursting up to ``tokens``; the excess is delayed or dropped."""

    tokens: int
    interval_ms: int
    on_excess: Literal["delay", "drop"] = "delay"

    @property
    def spacing_ms(self) -> float:
        """One token comes back every ``interval_ms / tokens``."""
        return self.interval_ms / self.tokens


def _whole(value: object) -> int:
    if isinstance(value, int | float | str):  # what int() reads
        return int(value)
    raise TypeError(f"a throttle rule needs numbers, got {value!r}")


def throttle_rule_from_wire(wire: Mapping[str, object]) -> ThrottleRule:
    """``{tokens, intervalMs, onExcess?}``; anything but ``"drop"`` delays, as ``throttle`` reads it."""
    on_excess: Literal["delay", "drop"] = "drop" if wire.get("onExcess") == "drop" else "delay"
    return ThrottleRule(_whole(wire["tokens"]), _whole(wire["intervalMs"]), on_excess)


@dataclass(frozen=True, slots=True)
class ThrottleDecision:
    """``slot_at``: when the job may run (now when a token is free); ``tat``: the key's new state.

    ``admitted`` is False when the job found no free token and the rule drops the excess; ``tat`` is then
    unchanged.
    """

    admitted: bool
    slot_at: int
    tat: float


def throttle(rule: ThrottleRule, tat: float | None, now_ms: int) -> ThrottleDecision:
    """GCRA: the token bucket of ``rule`` as one number per key, the theoretical arrival time ``tat``.

    A job may start at ``max(tat, now) - (interval_ms - spacing)``; a bucket that is full (``tat`` at or
    before now) admits ``tokens`` jobs at once, then one every ``spacing_ms``.
    """
    base = now_ms if tat is None else max(tat, float(now_ms))
    slot = max(float(now_ms), base - (rule.interval_ms - rule.spacing_ms))
    slot_at = int(-(-slot // 1))  # ceil: a slot is never earlier than the bucket allows
    if slot_at > now_ms and rule.on_excess == "drop":
        return ThrottleDecision(False, slot_at, base if tat is None else tat)
    return ThrottleDecision(True, slot_at, base + rule.spacing_ms)
