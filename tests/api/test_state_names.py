"""A run's and a node's state names: one list each, the same in the core, the stores and the REST schemas."""
# F-26, F-29, F-33

from __future__ import annotations

from typing import get_args

from tsumugi.api.models import NodeStateName as RestNodeStateName
from tsumugi.api.prometheus import RUN_STATES
from tsumugi.core.states import (
    COUNTED_FAILED_NODE_STATES,
    FAILED_NODE_STATES,
    TERMINAL_NODE_STATES,
    JobState,
    NodeStateName,
    RunStateName,
)
from tsumugi.storage.run_store import DONE_STATES, FAILED_STATES


def test_node_states_are_the_job_states_plus_pending_and_skipped() -> None:
    assert set(get_args(NodeStateName)) == {*JobState, "PENDING", "SKIPPED"}
    assert get_args(RestNodeStateName) == get_args(NodeStateName)


def test_run_states_are_the_four_the_rest_api_counts() -> None:
    assert set(get_args(RunStateName)) == set(RUN_STATES)


def test_the_node_sets_name_node_states_and_the_counters_use_them() -> None:
    names = set(get_args(NodeStateName))
    assert TERMINAL_NODE_STATES <= names and FAILED_NODE_STATES <= TERMINAL_NODE_STATES
    assert COUNTED_FAILED_NODE_STATES == FAILED_NODE_STATES - {"CANCELLED"}
    assert set(DONE_STATES) == TERMINAL_NODE_STATES and set(FAILED_STATES) == COUNTED_FAILED_NODE_STATES
