"""The seven states and the transition table (jobs.md §7.1-7.2)."""

from __future__ import annotations

import itertools

import pytest

from tsumugi.core.states import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    JobState,
    assert_transition,
    can_transition,
)
from tsumugi.errors import InvalidTransitionError

ALLOWED = {
    ("SCHEDULED", "QUEUED"),
    ("SCHEDULED", "CANCELLED"),
    ("QUEUED", "RUNNING"),
    ("QUEUED", "COMPLETED"),
    ("QUEUED", "FAILED"),
    ("QUEUED", "SCHEDULED"),
    ("QUEUED", "STALLED"),
    ("QUEUED", "CANCELLED"),
    ("RUNNING", "COMPLETED"),
    ("RUNNING", "FAILED"),
    ("RUNNING", "SCHEDULED"),
    ("RUNNING", "STALLED"),
    ("RUNNING", "CANCELLED"),
    ("FAILED", "SCHEDULED"),
    ("STALLED", "SCHEDULED"),
}


def test_active_and_terminal_partition_the_seven_states() -> None:
    # J-90
    assert {s.value for s in JobState} == {
        "SCHEDULED",
        "QUEUED",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "STALLED",
    }
    assert ACTIVE_STATES | TERMINAL_STATES == set(JobState)
    assert not ACTIVE_STATES & TERMINAL_STATES


@pytest.mark.parametrize(("src", "dst"), list(itertools.product([s.value for s in JobState], repeat=2)))
def test_transition_table(src: str, dst: str) -> None:
    # J-92 table plus the newer QUEUED/RUNNING -> CANCELLED (J-135)
    assert can_transition(src, dst) == ((src, dst) in ALLOWED)
    if (src, dst) in ALLOWED:
        assert_transition(src, dst)
    else:
        with pytest.raises(InvalidTransitionError, match=f"^invalid state transition: {src} -> {dst}$"):
            assert_transition(src, dst)


def test_completed_and_cancelled_have_no_way_out() -> None:
    # seed page: COMPLETED and CANCELLED are terminal with no transitions
    assert not any(can_transition("COMPLETED", s) or can_transition("CANCELLED", s) for s in JobState)


def test_unknown_state_is_never_a_valid_transition() -> None:
    assert not can_transition("DONE", "QUEUED")
