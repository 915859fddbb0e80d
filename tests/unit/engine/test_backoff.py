"""Backoff math (J-100..J-104)."""

from __future__ import annotations

import pytest

from tsumugi.core.backoff import (
    DEFAULT,
    DEFAULT_BACKOFF,
    Exponential,
    Fixed,
    backoff_from_wire,
    js_round,
    next_attempt,
)

NOW = 1_000_000
NO_JITTER = {**DEFAULT_BACKOFF, "jitter": False}


@pytest.mark.parametrize(
    ("attempts", "delay_ms"),
    [(1, 1000), (2, 2000), (3, 4000), (4, 8000), (12, 2_048_000), (13, 3_600_000), (40, 3_600_000)],
)
def test_default_schedule_without_jitter(attempts: int, delay_ms: int) -> None:
    # J-102: 1 s, 2 s, 4 s ... capped at 3 600 s from the 13th failure
    assert next_attempt(attempts, 100, NO_JITTER, NOW) == (False, NOW + delay_ms)


@pytest.mark.parametrize(("rand", "delay_ms"), [(0.0, 500), (0.5, 750), (0.999999, 1000)])
def test_equal_jitter_spans_half_to_full(rand: float, delay_ms: int) -> None:
    # J-101: delay = round(base/2 + rand*base/2)
    assert next_attempt(1, 3, DEFAULT_BACKOFF, NOW, rand) == (False, NOW + delay_ms)


def test_exhausted_when_attempts_reach_max() -> None:
    # J-101: attempts (after the failure) >= max_attempts -> exhausted
    assert next_attempt(3, 3, DEFAULT_BACKOFF, NOW) == (True, None)
    assert next_attempt(5, 3, DEFAULT_BACKOFF, NOW).exhausted


def test_fixed_backoff_with_and_without_jitter() -> None:
    # J-100: fixed delayMs; jitter absent means false
    assert next_attempt(1, 3, {"kind": "fixed", "delayMs": 30_000}, NOW) == (False, NOW + 30_000)
    assert next_attempt(1, 3, {"kind": "fixed", "delayMs": 30_000, "jitter": True}, NOW, 0.0) == (
        False,
        NOW + 15_000,
    )


def test_default_rand_is_one_half() -> None:
    # J-101: the default 0.5 only matters in tests
    assert next_attempt(1, 3, None, NOW) == (False, NOW + 750)


@pytest.mark.parametrize(
    ("value", "rounded"), [(0.5, 1), (1.5, 2), (2.5, 3), (-0.5, 0), (-1.5, -1), (2.4, 2)]
)
def test_js_round_is_half_toward_positive_infinity(value: float, rounded: int) -> None:
    # J-101: JS Math.round, not banker's rounding
    assert js_round(value) == rounded


def test_fixed_odd_delay_rounds_half_up() -> None:
    # J-101: base 3 with jitter and rand 0 -> 1.5 -> 2
    assert next_attempt(1, 3, {"kind": "fixed", "delayMs": 3, "jitter": True}, NOW, 0.0) == (False, NOW + 2)


def test_backoff_decoded_from_the_stored_wire() -> None:
    # J-100: any kind but fixed is exponential; missing fields take the defaults, a missing jitter is off
    assert backoff_from_wire(None) == DEFAULT == Exponential(1000, 2, 3_600_000, jitter=True)
    assert backoff_from_wire(DEFAULT_BACKOFF) == DEFAULT
    assert backoff_from_wire({"kind": "fixed", "delayMs": 250}) == Fixed(250, jitter=False)
    assert backoff_from_wire({"kind": "exponential", "baseMs": 10}) == Exponential(10, 2, 3_600_000, False)
    assert backoff_from_wire({}) == Exponential(jitter=False)
