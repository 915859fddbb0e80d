"""traceparent validation (J-40), progress normalization (J-67), aging (J-150a)."""

from __future__ import annotations

import math

import pytest

from tsumugi.core.progress import normalize_progress
from tsumugi.core.schedule import effective_priority
from tsumugi.core.trace import TRACEPARENT_ERROR, validate_traceparent
from tsumugi.errors import EnqueueError

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_valid_traceparent_and_none_pass() -> None:
    # J-40
    assert validate_traceparent(VALID) == VALID
    assert validate_traceparent(None) is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        VALID.upper(),
        "01" + VALID[2:],
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        VALID + "-",
        VALID[:-1],
        42,
    ],
)
def test_invalid_traceparent_raises_exact_message(value: object) -> None:
    # J-40: exact error text
    with pytest.raises(EnqueueError) as raised:
        validate_traceparent(value)
    assert str(raised.value) == "traceparent must be a valid W3C Trace Context version 00 value"
    assert str(raised.value) == TRACEPARENT_ERROR


@pytest.mark.parametrize(
    ("value", "normalized"),
    [
        (0.5, 0.5),
        (-1, 0.0),
        (7, 1.0),
        (None, None),
        (math.nan, None),
        (math.inf, None),
        ("0.5", None),
        (True, None),
    ],
)
def test_progress_normalization(value: object, normalized: float | None) -> None:
    # J-67: finite numbers clamped into [0, 1]; anything else is "no progress"
    assert normalize_progress(value) == normalized


def test_aging_counts_from_creation() -> None:
    # J-150a: +1 per interval waited since created_at
    assert effective_priority(0, 0, 3_600_000, 60_000) == 60
    assert effective_priority(5, 0, 59_999, 60_000) == 5
    assert effective_priority(5, 100, 0, 60_000) == 5  # negative wait counts as 0


@pytest.mark.parametrize("interval", [None, 0, -5])
def test_aging_disabled(interval: int | None) -> None:
    # J-150a: null or <= 0 means strict priority
    assert effective_priority(3, 0, 10**9, interval) == 3
