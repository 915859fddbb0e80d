"""Sleep and wait-for-event nodes in the run coordinator, on a FixedClock (ADR-0147, ADR-0148)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tsumugi.errors import InvalidFlowError
from tsumugi.flows import create_flow

flow = create_flow({})
HOUR = 3_600_000


def sleeping(deadline_ms: int | None = None, **sleep: Any) -> Any:
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        nap = f.sleep("nap", after={"a": a}, **(sleep or {"ms": HOUR}))
        f.node("b", "B", after={"nap": nap, "a": a}, input=lambda i, d: {"a": d["a"]})

    return flow(build, deadline_ms=deadline_ms)


def approving(timeout_ms: int | None = None, on_timeout: str = "fail", deadline_ms: int | None = None) -> Any:
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        ok = f.wait_for_event(
            "approval", after={"a": a}, event="order.approved", timeout_ms=timeout_ms, on_timeout=on_timeout
        )
        f.node("ship", "Ship", after={"ok": ok}, input=lambda i, d: {"by": d["ok"]["by"]})

    return flow(build, deadline_ms=deadline_ms)


async def started(world: Any, rid: str = "F:1", **kw: Any) -> Any:
    await world.get(rid).start("F", {"order": 7}, **kw)
    await world.settle()
    return world.get(rid)


async def test_sleep_holds_no_job_and_the_alarm_sits_at_its_end(make_world: Any) -> None:
    world = make_world({"F": sleeping()})
    run = await started(world)
    await world.finish("F:1", "a", result={"n": 1})
    await world.settle()
    nap = world.nodes("F:1")["nap"]
    assert (nap.state, nap.job_id, nap.wait_kind) == ("RUNNING", None, "sleep")
    assert nap.wake_at == world.clock.now() + HOUR
    assert world.alarms["F:1"].at == nap.wake_at  # the run's alarm, none of its own
    assert len(world.shards.all_jobs()) == 1  # only node a's job
    world.clock.advance(HOUR - 1)
    await world.settle()
    assert world.states("F:1")["nap"] == "RUNNING"
    world.clock.advance(1)
    await world.settle()
    assert world.states("F:1")["nap"] == "COMPLETED"
    assert world.states("F:1")["b"] == "SCHEDULED"  # dependents start in the same tick
    assert world.job_of("F:1", "b")["payload"] == {"a": {"n": 1}}
    await world.finish("F:1", "b")
    await world.settle()
    assert await run.state() == "COMPLETED"


async def test_sleep_until_reads_the_inputs_and_a_past_instant_completes_at_once(make_world: Any) -> None:
    world = make_world(
        {
            "F": sleeping(until=lambda i, d: i["at"]),
            "G": sleeping(until=lambda i, d: 0),
        }
    )
    at = world.clock.now() + 5_000
    await world.get("F:1").start("F", {"at": at})
    await world.get("G:1").start("G", {})
    await world.settle()
    await world.finish("F:1", "a")
    await world.finish("G:1", "a")
    await world.settle()
    assert world.nodes("F:1")["nap"].wake_at == at
    assert world.alarms["F:1"].at == at
    assert world.states("G:1")["nap"] == "COMPLETED"


async def test_until_returning_no_number_fails_the_node(make_world: Any) -> None:
    world = make_world({"F": sleeping(until=lambda i, d: "soon")})
    await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    nap = world.nodes("F:1")["nap"]
    assert (nap.state, nap.error) == ("FAILED", "until must return an epoch-ms number: nap")
    assert world.states("F:1")["b"] == "SKIPPED"


async def test_alarm_sits_at_the_earlier_of_deadline_and_wake(make_world: Any) -> None:
    world = make_world({"F": sleeping(deadline_ms=60_000)})
    run = await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    assert world.alarms["F:1"].at == world.clock.now() + 60_000
    world.clock.advance(60_000)
    await world.settle()
    nap = world.nodes("F:1")["nap"]
    assert (nap.state, nap.error) == ("FAILED", "run deadline exceeded: 60000ms")  # subject to the deadline
    assert await run.state() == "FAILED"


async def test_cancel_stops_a_sleep_and_a_wait(make_world: Any) -> None:
    world = make_world({"F": sleeping(), "G": approving()})
    for rid in ("F:1", "G:1"):
        await world.get(rid).start(rid[0], {})
        await world.settle()
        await world.finish(rid, "a")
        await world.settle()
        assert await world.get(rid).cancel() == {"ok": True}
    await world.settle()
    assert world.states("F:1") == {"a": "COMPLETED", "nap": "CANCELLED", "b": "CANCELLED"}
    assert world.states("G:1") == {"a": "COMPLETED", "approval": "CANCELLED", "ship": "CANCELLED"}
    assert await world.get("F:1").state() == "CANCELLED"
    assert await world.get("G:1").send_event("order.approved", {}) == {
        "ok": False,
        "reason": "invalid-state",
        "node": "approval",
    }


async def test_event_completes_a_waiting_node_with_its_payload(make_world: Any) -> None:
    world = make_world({"F": approving()})
    run = await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    assert world.states("F:1")["approval"] == "RUNNING"
    assert world.alarms["F:1"].at is None  # no timeout, no deadline: nothing to wake for
    assert await run.send_event("order.approved", {"by": "ana"}) == {
        "ok": True,
        "node": "approval",
        "state": "COMPLETED",
    }
    await world.settle()
    approval = world.nodes("F:1")["approval"]
    assert json.loads(approval.result) == {"by": "ana"}
    assert world.job_of("F:1", "ship")["payload"] == {"by": "ana"}  # read like any node's result
    assert await run.send_event("order.approved", {"by": "bo"}) == {
        "ok": False,
        "reason": "already-satisfied",
        "node": "approval",
    }
    assert json.loads(world.nodes("F:1")["approval"].result) == {"by": "ana"}  # not applied again


async def test_an_early_event_is_kept_and_taken_when_the_wait_starts(make_world: Any) -> None:
    world = make_world({"F": approving()})
    run = await started(world)
    assert await run.send_event("order.approved", {"by": "early"}) == {
        "ok": True,
        "node": "approval",
        "state": "PENDING",
    }
    assert await run.send_event("order.approved", {"by": "late"}) == {
        "ok": False,
        "reason": "already-satisfied",
        "node": "approval",
    }
    assert world.states("F:1")["approval"] == "PENDING"
    await world.finish("F:1", "a")
    await world.settle()
    assert world.states("F:1")["approval"] == "COMPLETED"
    assert world.job_of("F:1", "ship")["payload"] == {"by": "early"}


async def test_unknown_event_gone_run_and_oversized_payload(make_world: Any) -> None:
    world = make_world({"F": approving()})
    run = await started(world)
    assert await run.send_event("order.shipped", {}) == {"ok": False, "reason": "unknown-event"}
    assert await world.get("F:never").send_event("order.approved", {}) == {"ok": False, "reason": "gone"}
    refused = await run.send_event("order.approved", "x" * 9000)
    assert refused["reason"] == "invalid-payload"
    assert world.states("F:1")["approval"] == "PENDING"


@pytest.mark.parametrize(
    ("on_timeout", "state", "run_state"), [("fail", "FAILED", "FAILED"), ("skip", "SKIPPED", "COMPLETED")]
)
async def test_timeout_fails_or_skips(make_world: Any, on_timeout: str, state: str, run_state: str) -> None:
    world = make_world({"F": approving(timeout_ms=30_000, on_timeout=on_timeout)})
    run = await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    assert world.alarms["F:1"].at == world.clock.now() + 30_000
    world.clock.advance(30_000)
    await world.settle()
    approval = world.nodes("F:1")["approval"]
    assert (approval.state, approval.error) == (state, "event did not arrive in time: order.approved")
    assert world.states("F:1")["ship"] == "SKIPPED"
    assert await run.state() == run_state
    if state == "FAILED":
        assert await run.send_event("order.approved", {}) == {
            "ok": False,
            "reason": "invalid-state",
            "node": "approval",
        }


async def test_resume_keeps_satisfied_waits_and_waits_again_after_a_timeout(make_world: Any) -> None:
    def build(f: Any) -> None:
        ok = f.wait_for_event("approval", event="order.approved")
        late = f.wait_for_event("second", event="second.look", timeout_ms=1_000)
        f.node("ship", "Ship", after={"ok": ok, "late": late}, input=lambda i, d: d)

    world = make_world({"F": flow(build)})
    run = await started(world)
    await run.send_event("order.approved", {"by": "ana"})
    world.clock.advance(1_000)
    await world.settle()
    assert world.states("F:1") == {"approval": "COMPLETED", "second": "FAILED", "ship": "SKIPPED"}
    assert await run.state() == "FAILED"
    assert await run.retry() == {"ok": True}
    await world.settle()
    assert world.states("F:1") == {"approval": "COMPLETED", "second": "RUNNING", "ship": "PENDING"}
    assert world.nodes("F:1")["second"].wake_at == world.clock.now() + 1_000  # waits afresh
    assert (await run.send_event("second.look", "yes"))["state"] == "COMPLETED"
    await world.settle()
    assert world.job_of("F:1", "ship")["payload"] == {"ok": {"by": "ana"}, "late": "yes"}


async def test_a_sleep_survives_a_new_coordinator_on_the_same_storage(make_world: Any) -> None:
    world = make_world({"F": sleeping()})
    await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    old = world.get("F:1")
    from tsumugi.coordinator.run import RunCoordinator

    reborn = RunCoordinator(
        "F:1",
        old.ctx.sql,
        clock=world.clock,
        alarm=world.alarms["F:1"],
        shards=world.shards,
        runs=world,
        read_model=world.read_model,
        flows=world.flows,
    )
    world.coordinators["F:1"] = reborn
    world.clock.advance(HOUR)
    await world.settle()
    assert world.states("F:1")["nap"] == "COMPLETED"


async def test_snapshots_carry_the_wait(make_world: Any) -> None:
    world = make_world({"F": approving(timeout_ms=5_000)})
    await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    last = [n for n in world.read_model.nodes if n["node_id"] == "approval"][-1]
    assert (last["state"], last["wait"], last["wait_event"]) == ("RUNNING", "event", "order.approved")
    assert last["wake_at"] == world.clock.now() + 5_000


def test_definition_checks() -> None:
    with pytest.raises(InvalidFlowError, match="exactly one of ms and until"):
        flow(lambda f: f.sleep("s"))
    with pytest.raises(InvalidFlowError, match="exactly one of ms and until"):
        flow(lambda f: f.sleep("s", ms=1, until=lambda i: 1))
    with pytest.raises(InvalidFlowError, match="ms must be a non-negative integer"):
        flow(lambda f: f.sleep("s", ms=-1))
    with pytest.raises(InvalidFlowError, match="event must be 1 to 128"):
        flow(lambda f: f.wait_for_event("w", event="a/b"))
    with pytest.raises(InvalidFlowError, match="on_timeout must be 'fail' or 'skip'"):
        flow(lambda f: f.wait_for_event("w", event="e", on_timeout="retry"))
    with pytest.raises(InvalidFlowError, match="timeout_ms must be a positive integer"):
        flow(lambda f: f.wait_for_event("w", event="e", timeout_ms=0))

    def twice(f: Any) -> None:
        f.wait_for_event("w1", event="e")
        f.wait_for_event("w2", event="e")

    with pytest.raises(InvalidFlowError, match="two nodes wait for event e: w1, w2"):
        flow(twice)
