"""The shipped test harness: fakes, helpers and simulators for code built on Tsumugi."""

from tsumugi.core.flow.advance import advance, is_node_terminal
from tsumugi.testing.context import (
    DEFAULT_TEST_JOB_ID,
    TestJobContext,
    create_test_context,
    fixed_clock,
    run_performer,
)
from tsumugi.testing.pure_functions import JobView, next_attempt, schedule
from tsumugi.testing.simulate import SimulatedNode, SimulationResult, simulate_flow

__all__ = [
    "DEFAULT_TEST_JOB_ID",
    "JobView",
    "SimulatedNode",
    "SimulationResult",
    "TestJobContext",
    "advance",
    "create_test_context",
    "fixed_clock",
    "is_node_terminal",
    "next_attempt",
    "run_performer",
    "schedule",
    "simulate_flow",
]
