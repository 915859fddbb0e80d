"""``advance`` with waiting nodes (ADR-0147): a ``wait`` decision, and a stop while halting."""

from __future__ import annotations

from tsumugi.core.flow.advance import Decision, DecisionType, NodeView, advance
from tsumugi.core.flow.live_progress import live_progress_of
from tsumugi.core.flow.waits import OnTimeout, WaitKind, WaitSpec, due_outcome, wake_at_of


def test_a_pending_wait_whose_dependencies_succeeded_is_decided_wait() -> None:
    nodes = [NodeView("a", "COMPLETED"), NodeView("w", "PENDING", after=("a",), waiting=True)]
    assert advance(nodes, cancelling=False).decisions == [Decision(DecisionType.WAIT, "w")]
    live = live_progress_of(enumerate(nodes))
    assert live.decisions(halting=False, limit=10) == [Decision(DecisionType.WAIT, "w")]


def test_a_running_wait_gets_no_decision_until_halting_stops_it() -> None:
    nodes = [NodeView("w", "RUNNING", waiting=True), NodeView("j", "RUNNING")]
    assert advance(nodes, cancelling=False).decisions == []
    assert advance(nodes, cancelling=True).decisions == [Decision(DecisionType.CANCEL, "w")]
    assert advance(nodes, cancelling=False, expired=True).state == "RUNNING"


def test_wake_instants_and_outcomes() -> None:
    assert wake_at_of("s", WaitSpec(WaitKind.SLEEP, ms=10), {}, {}, 100) == 110
    assert wake_at_of("s", WaitSpec(WaitKind.SLEEP, until=lambda i, d: i["at"]), {"at": 5}, {}, 100) == 5
    assert wake_at_of("e", WaitSpec(WaitKind.EVENT, event="x"), {}, {}, 100) is None
    assert wake_at_of("e", WaitSpec(WaitKind.EVENT, event="x", timeout_ms=7), {}, {}, 100) == 107
    assert due_outcome("sleep", None, None).state == "COMPLETED"
    assert due_outcome("event", "x", OnTimeout.SKIP.value).state == "SKIPPED"
    failed = due_outcome("event", "x", "fail")
    assert (failed.state, failed.error) == ("FAILED", "event did not arrive in time: x")
