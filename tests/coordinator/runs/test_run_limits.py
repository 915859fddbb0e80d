"""Per-tick limits, arming, parent notification retries and coordinator/simulation agreement."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tsumugi.flows import create_flow
from tsumugi.testing import simulate_flow

flow = create_flow({})


async def test_decisions_beyond_two_hundred_are_deferred(make_world: Any) -> None:
    # F-35 step 3 and step 9: the excess waits for the next tick, which is armed at once
    world = make_world(
        {"F": flow(lambda f: f.fan_out("g", "G", over=lambda: list(range(250)), input=lambda v: v))}
    )
    run = world.get("F:1")
    await run.start("F", None)
    world.alarms["F:1"].at = None
    await run.alarm()
    scheduled = [s for s in world.states("F:1").values() if s == "SCHEDULED"]
    assert len(scheduled) == 199  # one decision went to the expansion
    assert world.alarms["F:1"].at == world.clock.now()
    await world.settle()
    assert list(world.states("F:1").values()).count("SCHEDULED") == 250


async def test_alarm_is_earliest_wins(make_world: Any) -> None:
    # F-37
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: 1))})
    run = world.get("F:1")
    world.alarms["F:1"].at = world.clock.now() - 10
    await run.start("F", None)
    assert world.alarms["F:1"].at == world.clock.now() - 10
    await run.ctx.arm(world.clock.now() + 99)
    assert world.alarms["F:1"].at == world.clock.now() - 10


async def test_default_depth_limit_allows_three(make_world: Any) -> None:
    # F-62
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: 1))})
    assert (await world.get("F:d3").start("F", None, depth=3))["created"] is True


async def test_parent_notification_is_retried_until_delivered(make_world: Any) -> None:
    # F-63: a child is never swept before its parent was told
    child = flow(lambda f: f.node("c", "C", input=lambda: 1))
    parent = flow(lambda f: f.subflow("s", child, input=lambda: {}))
    world = make_world({"P": parent, "C": child})
    await world.get("P:1").start("P", None)
    await world.settle()
    real_get = world.get
    failing = {"on": True}

    class Broken:
        async def notify_child(self, *args: Any) -> None:
            raise RuntimeError("parent unreachable")

    world.get = lambda rid: Broken() if rid == "P:1" and failing["on"] else real_get(rid)  # type: ignore[method-assign]
    await world.finish("C:1-s", "c")
    alarm = world.alarms["C:1-s"]
    alarm.at = None
    await real_get("C:1-s").alarm()
    assert real_get("C:1-s").ctx.store.run().parent_notified == 0
    assert alarm.at == world.clock.now()
    failing["on"] = False
    await world.settle()
    assert world.states("P:1")["s"] == "COMPLETED"
    assert await real_get("P:1").state() == "COMPLETED"


async def test_cancel_reaches_fan_out_children_and_spawns(make_world: Any) -> None:
    # F-69: a RUNNING container is not cancelled itself; its pending children are; it aggregates
    def build(f: Any) -> None:
        f.fan_out("g", "G", over=lambda: [1, 2], input=lambda v: v)

    world = make_world({"F": flow(build)})
    run = world.get("F:1")
    await run.start("F", None)
    await world.settle()
    await world.finish("F:1", "g:0", spawns=[{"id": "s", "binding": "S", "payload": 1}])
    await run.cancel()
    await world.settle()
    assert world.states("F:1") == {
        "g": "COMPLETED",
        "g:0": "COMPLETED",
        "g:1": "CANCELLED",
        "g:0:s": "CANCELLED",
    }
    assert await run.state() == "CANCELLED"


# ----------------------------------------------------------------------------- agreement property
@st.composite
def dags(draw: Any) -> tuple[list[tuple[str, list[int], str]], set[str]]:
    count = draw(st.integers(1, 6))
    nodes = []
    for i in range(count):
        deps = sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=2)))) if i else []
        trigger = draw(st.sampled_from(["success", "failure", "always"])) if deps else "success"
        nodes.append((f"n{i}", deps, trigger))
    fails = set(draw(st.lists(st.sampled_from([n[0] for n in nodes]), max_size=3)))
    return nodes, fails


def build_flow(nodes: list[tuple[str, list[int], str]]) -> Any:
    def build(f: Any) -> None:
        refs: list[Any] = []
        for node_id, deps, trigger in nodes:
            after = {f"d{d}": refs[d] for d in deps}
            refs.append(
                f.node(
                    node_id,
                    "Job",
                    after=after or None,
                    trigger=trigger if after else None,
                    input=lambda i, d, node_id=node_id: {"me": node_id, "deps": d},
                )
            )

    return flow(build)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dags())
async def test_coordinator_agrees_with_simulation(make_world: Any, case: Any) -> None:
    # F-94: simulate_flow predicts the coordinator's node states, payloads and run state
    nodes, fails = case
    definition = build_flow(nodes)
    expected = simulate_flow(definition, {}, results=lambda n: {"from": n["id"]}, fails=fails)
    world = make_world({"F": definition})
    run = world.get("F:1")
    await run.start("F", {})
    await world.settle()
    for _ in range(20):
        pending = [nid for nid, s in world.states("F:1").items() if s == "SCHEDULED"]
        if not pending:
            break
        for nid in pending:
            if nid in fails:
                await world.finish("F:1", nid, "FAILED", error="x")
            else:
                await world.finish("F:1", nid, result={"from": nid})
        await world.settle()
    assert world.states("F:1") == {n.id: n.state for n in expected.nodes}
    for n in expected.nodes:
        if n.state in ("COMPLETED", "FAILED"):
            assert world.job_of("F:1", n.id)["payload"] == n.payload
    assert await run.state() == expected.state
