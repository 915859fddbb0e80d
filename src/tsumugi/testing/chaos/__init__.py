"""``tsumugi.testing.chaos``: run an app on the local runtime under seeded faults and check what held.

The simulator hosts the app's performers, flows and schedules on ``LocalRuntime`` under a
``SimulatedClock`` (a ``FixedClock``), runs a scenario, and injects faults drawn from a seed: reports
lost after the performer returned, messages delivered twice, crashes between claim and perform and
between perform and report, attempt timeouts, heartbeats that stop, clock jumps and a restart in the
middle of a coordinator's tick. It then checks the engine's guarantees (nothing lost, no at-most-once
job run twice, every job and run settles) and the invariants given as callbacks, and shrinks a failing
schedule to a minimal one that replays from its seed::

    failure = await find_failure(app, place_orders, invariants=[each_order_charged_once],
                                 bindings=lambda: {"PAYMENTS": FakeGateway()})
    assert failure is None, failure

``pytest_plugins = ["tsumugi.testing.chaos.pytest_plugin"]`` adds the ``chaos`` fixture. ADR-0142
records the design; docs/guide/testing-with-chaos.md walks through an example.
"""

from tsumugi.testing.chaos.checks import Invariant
from tsumugi.testing.chaos.errors import ChaosError, ChaosFailureError
from tsumugi.testing.chaos.explore import Chaos, ChaosFailure, check, find_failure, simulate
from tsumugi.testing.chaos.records import (
    ChaosOutcome,
    ChaosReport,
    InjectedFault,
    JobRecord,
    PerformRecord,
    ReportRecord,
    Violation,
)
from tsumugi.testing.chaos.schedule import FAULT_KINDS, Fault, FaultKind, FaultSchedule
from tsumugi.testing.chaos.session import ChaosSession, Scenario
from tsumugi.testing.chaos.sim_clock import SimulatedClock

__all__ = [
    "FAULT_KINDS",
    "Chaos",
    "ChaosError",
    "ChaosFailure",
    "ChaosFailureError",
    "ChaosOutcome",
    "ChaosReport",
    "ChaosSession",
    "Fault",
    "FaultKind",
    "FaultSchedule",
    "InjectedFault",
    "Invariant",
    "JobRecord",
    "PerformRecord",
    "ReportRecord",
    "Scenario",
    "SimulatedClock",
    "Violation",
    "check",
    "find_failure",
    "simulate",
]
