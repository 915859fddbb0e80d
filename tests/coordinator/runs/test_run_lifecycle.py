"""Starting runs, dispatching nodes, fan-out and results (flows.md §4-§9)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.core import wire_format
from tsumugi.core.config import RunSettings
from tsumugi.errors import InvalidFlowError
from tsumugi.flows import create_flow

flow = create_flow({})


def greetings(**fan: Any) -> Any:
    def build(f: Any) -> None:
        lst = f.node("list", "ListNames", input=lambda i: {"prefix": i["prefix"]}, max_attempts=5)
        each = f.fan_out(
            "greet",
            "Greet",
            after={"list": lst},
            over=lambda _i, d: d["list"]["names"],
            input=lambda name: {"name": name},
            **fan,
        )
        f.node(
            "report",
            "Report",
            after={"each": each},
            input=lambda _i, d: {"total": d["each"]["total"], "failed": d["each"]["failed"]},
        )

    return flow(build)


async def test_start_creates_run_and_pending_nodes(make_world: Any) -> None:
    # F-20, F-23, F-24
    world = make_world({"GREET": greetings()})
    run = world.get("GREET:abc")
    assert await run.start("GREET", {"prefix": "hi"}) == {"id": "GREET:abc", "created": True}
    row = run.ctx.store.run()
    assert (row.flow, row.state, row.input, row.depth, row.deadline_at) == (
        "GREET",
        "RUNNING",
        '{"prefix":"hi"}',
        0,
        None,
    )
    assert world.states("GREET:abc") == {"list": "PENDING", "greet": "PENDING", "report": "PENDING"}
    assert [n.seq for n in run.ctx.store.nodes()] == [0, 1, 2]
    assert world.alarms["GREET:abc"].at == world.clock.now()


async def test_repeated_start_returns_existing_before_validation(make_world: Any) -> None:
    # F-20 step 1, F-21
    world = make_world({"GREET": greetings()})
    run = world.get("GREET:abc")
    await run.start("GREET", {"prefix": "hi"})
    again = await run.start("NOT-A-FLOW", {"other": 1}, deadline_ms=-5)
    assert again == {"id": "GREET:abc", "created": False}
    assert run.ctx.store.run().input == '{"prefix":"hi"}'


async def test_start_errors(make_world: Any) -> None:
    # F-20 steps 2-4
    world = make_world({"GREET": greetings()})
    with pytest.raises(InvalidFlowError, match="flow is not registered: NOPE"):
        await world.get("NOPE:a").start("NOPE", {})
    with pytest.raises(InvalidFlowError, match="subflow nesting exceeded the limit: 3"):
        await world.get("GREET:deep").start("GREET", {}, depth=4)
    with pytest.raises(InvalidFlowError, match="deadline_ms must be a positive integer: 0"):
        await world.get("GREET:dl").start("GREET", {}, deadline_ms=0)
    assert await world.get("GREET:deep").state() is None  # nothing was created


async def test_job_node_enqueue_wire_shape(make_world: Any) -> None:
    # F-9, F-36 start, F-40, F-41, F-47
    world = make_world({"GREET": greetings()}, shards_of={"ListNames": 4})
    await world.get("GREET:abc").start("GREET", {"prefix": "hi"})
    await world.settle()
    node = world.nodes("GREET:abc")["list"]
    assert node.state == "SCHEDULED"
    assert node.job_id.startswith("ListNames#") and ":" in node.job_id
    job = world.job_of("GREET:abc", "list")
    assert job == {
        "payload": {"prefix": "hi"},
        "maxAttempts": 5,
        "id": node.job_id,
        "binding": "ListNames",
        "runId": "GREET:abc",
        "nodeId": "list",
        "partitionKey": "GREET:abc",
    }


async def test_full_run_with_fan_out(make_world: Any) -> None:
    # F-49, F-52, F-53, F-36 aggregate, F-33
    world = make_world({"GREET": greetings()})
    rid = "GREET:abc"
    await world.get(rid).start("GREET", {"prefix": "hi"})
    await world.settle()
    await world.finish(rid, "list", result={"names": ["a", "b"]})
    await world.settle()
    states = world.states(rid)
    assert states == {
        "list": "COMPLETED",
        "greet": "RUNNING",
        "report": "PENDING",
        "greet:0": "SCHEDULED",
        "greet:1": "SCHEDULED",
    }
    child = world.nodes(rid)["greet:0"]
    assert (child.parent, child.origin, child.payload) == ("greet", "fanOut", '{"name":"a"}')
    assert world.job_of(rid, "greet:1")["payload"] == {"name": "b"}
    await world.finish(rid, "greet:0")
    await world.finish(rid, "greet:1", "FAILED", error="boom")
    await world.settle()
    nodes = world.nodes(rid)
    assert nodes["greet"].state == "COMPLETED"
    assert wire_format.loads(nodes["greet"].result) == {"total": 2, "succeeded": 1, "failed": 1}
    assert world.job_of(rid, "report")["payload"] == {"total": 2, "failed": 1}
    await world.finish(rid, "report")
    await world.settle()
    assert await world.get(rid).state() == "COMPLETED"  # F-53: child failure does not fail the run


async def test_zero_items_and_keys_and_duplicates(make_world: Any) -> None:
    # F-4, F-50, F-51
    world = make_world({"G": greetings(key=lambda n: n)})
    await world.get("G:a").start("G", {"prefix": "x"})
    await world.settle()
    await world.finish("G:a", "list", result={"names": ["al", "bo", "al"]})
    await world.settle()
    assert sorted(k for k in world.states("G:a") if ":" in k) == ["greet:al", "greet:bo"]
    world2 = make_world({"G": greetings()})
    await world2.get("G:b").start("G", {"prefix": "x"})
    await world2.settle()
    await world2.finish("G:b", "list", result={"names": []})
    await world2.settle()
    assert world2.job_of("G:b", "report")["payload"] == {"total": 0, "failed": 0}


async def test_invalid_fan_out_key_fails_the_container(make_world: Any) -> None:
    # F-51 with ADR-0073: a failing mapping function fails its node instead of wedging the run
    world = make_world({"G": greetings(key=lambda n: "bad key")})
    await world.get("G:a").start("G", {"prefix": "x"})
    await world.settle()
    await world.finish("G:a", "list", result={"names": ["q"]})
    await world.settle()
    nodes = world.nodes("G:a")
    assert nodes["greet"].state == "FAILED"
    assert nodes["greet"].error.startswith('invalid node id: "bad key"')
    assert nodes["report"].state == "SKIPPED"
    assert await world.get("G:a").state() == "FAILED"


async def test_node_limit_on_fan_out(make_world: Any) -> None:
    # F-49, F-83: exactly max_nodes is allowed, one more fails the container
    world = make_world({"G": greetings()}, settings=RunSettings(max_nodes=5))
    await world.get("G:ok").start("G", {"prefix": "x"})
    await world.settle()
    await world.finish("G:ok", "list", result={"names": ["a", "b"]})
    await world.settle()
    assert world.states("G:ok")["greet"] == "RUNNING"
    await world.get("G:no").start("G", {"prefix": "x"})
    await world.settle()
    await world.finish("G:no", "list", result={"names": ["a", "b", "c"]})
    await world.settle()
    assert world.nodes("G:no")["greet"].error == "node count exceeded the limit: 5"


async def test_mapping_functions_see_current_deps_and_results(make_world: Any) -> None:
    # F-42: deps keyed by after names; a node without a result gives None
    seen: list[Any] = []

    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        b = f.node("b", "B", input=lambda: {})
        f.node("c", "C", after={"first": a, "second": b}, input=lambda _i, d: seen.append(d) or {})

    world = make_world({"F": flow(build)})
    await world.get("F:1").start("F", None)
    await world.settle()
    await world.finish("F:1", "a", result=[1])
    await world.finish("F:1", "b")
    await world.settle()
    assert seen == [{"first": [1], "second": None}]
    assert world.get("F:1").ctx.store.run().input == "null"


async def test_collect_hands_child_results_downstream(make_world: Any) -> None:
    # ADR-0072
    def build(f: Any) -> None:
        each = f.fan_out("g", "G", over=lambda: ["x", "y"], key=lambda v: v, input=lambda v: v, collect=True)
        f.node("sum", "S", after={"each": each}, input=lambda _i, d: d["each"])

    world = make_world({"F": flow(build)})
    await world.get("F:1").start("F", None)
    await world.settle()
    await world.finish("F:1", "g:x", result={"n": 1})
    await world.finish("F:1", "g:y", "FAILED", error="no")
    await world.settle()
    assert world.job_of("F:1", "sum")["payload"] == {
        "total": 2,
        "succeeded": 1,
        "failed": 1,
        "results": {"x": {"n": 1}, "y": None},
    }
    assert wire_format.loads(world.nodes("F:1")["g"].result) == {"total": 2, "succeeded": 1, "failed": 1}
