"""The pure debounce and throttle decisions (ADR-0149, ADR-0150)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tsumugi.core.enqueue_keys import ThrottleRule, debounced_run_after, throttle


def test_debounce_run_after_is_bounded_by_max() -> None:
    assert debounced_run_after(100, 50, None) == 150
    assert debounced_run_after(100, 50, 120) == 120
    assert debounced_run_after(100, 50, 90) == 100  # never in the past


def test_throttle_bursts_then_spaces() -> None:
    rule = ThrottleRule(tokens=3, interval_ms=900)
    tat = None
    slots = []
    for _ in range(5):
        decision = throttle(rule, tat, 0)
        slots.append(decision.slot_at)
        tat = decision.tat
    assert slots == [0, 0, 0, 300, 600]


def test_drop_keeps_the_state() -> None:
    rule = ThrottleRule(tokens=1, interval_ms=1000, on_excess="drop")
    first = throttle(rule, None, 0)
    second = throttle(rule, first.tat, 10)
    assert first.admitted and not second.admitted and second.tat == first.tat and second.slot_at == 1000


@given(st.integers(1, 5), st.integers(1, 5000), st.lists(st.integers(0, 3000), max_size=30))
def test_no_interval_holds_more_than_tokens_admitted_at_once(
    tokens: int, interval: int, gaps: list[int]
) -> None:
    # Token bucket: in any window of interval_ms, at most tokens + (window / spacing) starts.
    rule = ThrottleRule(tokens=tokens, interval_ms=interval)
    now, tat, starts = 0, None, []
    for gap in gaps:
        now += gap
        decision = throttle(rule, tat, now)
        assert decision.slot_at >= now
        starts.append(decision.slot_at)
        tat = decision.tat
    ordered = sorted(starts)
    for i, start in enumerate(ordered):
        within = [s for s in ordered[i:] if s < start + interval]
        assert len(within) <= 2 * tokens
