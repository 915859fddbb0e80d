"""``simulate_flow`` with sleeps and waits for events: given events and a simulated clock (ADR-0147, 0148)."""

from __future__ import annotations

from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.flows import create_flow
from tsumugi.testing import simulate_flow

flow = create_flow({})
HOUR = 3_600_000


@flow
def ORDER(f: Any) -> None:
    placed = f.node("place", "Place", input=lambda i, d: {"order": i["order"]})
    ok = f.wait_for_event("approval", after={"p": placed}, event="order.approved", timeout_ms=HOUR)
    cool = f.sleep("cool_down", after={"ok": ok}, ms=HOUR)
    f.node("ship", "Ship", after={"ok": ok, "cool": cool}, input=lambda i, d: {"by": d["ok"]["by"]})


def test_an_event_becomes_the_node_result_and_a_sleep_advances_the_clock() -> None:
    clock = FixedClock(1_000)
    sim = simulate_flow(ORDER, {"order": 7}, events={"order.approved": {"by": "ana"}}, clock=clock)
    assert sim.state == "COMPLETED"
    by_id = {n.id: n for n in sim.nodes}
    assert [n.id for n in sim.nodes] == ["place", "approval", "cool_down", "ship"]
    assert by_id["approval"].result == {"by": "ana"}
    assert by_id["ship"].payload == {"by": "ana"}
    assert by_id["cool_down"].at == 1_000 + HOUR
    assert clock.now() == 1_000 + HOUR


def test_a_missing_event_times_out() -> None:
    sim = simulate_flow(ORDER, {"order": 7})
    by_id = {n.id: n for n in sim.nodes}
    assert (by_id["approval"].state, by_id["approval"].error) == (
        "FAILED",
        "event did not arrive in time: order.approved",
    )
    assert by_id["approval"].at == HOUR
    assert by_id["ship"].state == "SKIPPED"
    assert sim.state == "FAILED"


def test_skip_on_timeout_and_a_wait_without_timeout_keeps_the_run_running() -> None:
    @flow
    def SKIPPING(f: Any) -> None:
        ok = f.wait_for_event("w", event="e", timeout_ms=10, on_timeout="skip")
        f.node("after", "A", after={"ok": ok}, trigger="always", input=lambda i, d: {"got": d["ok"]})

    sim = simulate_flow(SKIPPING, {})
    assert [(n.id, n.state) for n in sim.nodes] == [("w", "SKIPPED"), ("after", "COMPLETED")]
    assert sim.state == "COMPLETED"

    @flow
    def FOREVER(f: Any) -> None:
        f.wait_for_event("w", event="e")

    assert simulate_flow(FOREVER, {}).state == "RUNNING"


def test_sleep_until_reads_the_inputs() -> None:
    @flow
    def LATER(f: Any) -> None:
        f.sleep("nap", until=lambda i, d: i["at"])

    sim = simulate_flow(LATER, {"at": 5_000}, clock=FixedClock(1_000))
    assert [(n.id, n.state, n.at) for n in sim.nodes] == [("nap", "COMPLETED", 5_000)]
