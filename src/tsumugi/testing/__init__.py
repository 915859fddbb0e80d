"""The shipped test harness: fakes, helpers and simulators for code built on Tsumugi.

The chaos simulator's names (``ChaosReport``, ``FaultSchedule``, ...) load ``tsumugi.testing.chaos``,
and with it the local runtime, only when first used: a performer's unit test stays light.
"""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from tsumugi.testing.chaos import (
        Chaos,
        ChaosFailure,
        ChaosFailureError,
        ChaosOutcome,
        ChaosReport,
        ChaosSession,
        Fault,
        FaultSchedule,
    )

__all__ = [
    "DEFAULT_TEST_JOB_ID",
    "Chaos",
    "ChaosFailure",
    "ChaosFailureError",
    "ChaosOutcome",
    "ChaosReport",
    "ChaosSession",
    "Fault",
    "FaultSchedule",
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

_CHAOS_NAMES = frozenset(
    {
        "Chaos",
        "ChaosFailure",
        "ChaosFailureError",
        "ChaosOutcome",
        "ChaosReport",
        "ChaosSession",
        "Fault",
        "FaultSchedule",
    }
)


def __getattr__(name: str) -> object:
    if name in _CHAOS_NAMES:
        from tsumugi.testing import chaos

        return getattr(chaos, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
