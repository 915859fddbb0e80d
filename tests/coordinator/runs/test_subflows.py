"""Subflows: child runs, mirroring, cancellation, depth and resume (flows.md §12)."""

from __future__ import annotations

from typing import Any

from tsumugi.core.config import RunSettings
from tsumugi.flows import create_flow

flow = create_flow({})


def flows(child_deadline: int | None = None) -> dict[str, Any]:
    reporting = flow(
        lambda f: f.node("r", "R", input=lambda i: {"ids": i["ids"]}), deadline_ms=child_deadline
    )

    def build(f: Any) -> None:
        lst = f.node("list", "LIST", input=lambda: {})
        rep = f.subflow("report", reporting, after={"list": lst}, input=lambda _i, d: {"ids": d["list"]})
        f.node("notify", "NOTIFY", after={"rep": rep}, input=lambda _i, d: {"rep": d["rep"]})

    return {"PIPELINE": flow(build), "REPORTING": reporting}


async def to_child(world: Any) -> Any:
    parent = world.get("PIPELINE:abc")
    await parent.start("PIPELINE", {})
    await world.settle()
    await world.finish("PIPELINE:abc", "list", result=[1, 2])
    await world.settle()
    return parent


async def test_child_run_starts_with_derived_id_and_parent_link(make_world: Any) -> None:
    # F-8, F-61, F-62
    world = make_world(flows())
    await to_child(world)
    node = world.nodes("PIPELINE:abc")["report"]
    assert (node.state, node.child_run_id, node.binding, node.subflow) == (
        "RUNNING",
        "REPORTING:abc-report",
        "",
        "REPORTING",
    )
    child = world.get("REPORTING:abc-report").ctx.store.run()
    assert (child.parent_run_id, child.parent_node_id, child.depth, child.input) == (
        "PIPELINE:abc",
        "report",
        1,
        '{"ids":[1,2]}',
    )


async def test_child_completion_is_mirrored_without_result(make_world: Any) -> None:
    # F-63, F-16: the parent node gets no result
    world = make_world(flows())
    parent = await to_child(world)
    await world.finish("REPORTING:abc-report", "r", result={"big": 1})
    await world.settle()
    assert world.get("REPORTING:abc-report").ctx.store.run().parent_notified == 1
    assert world.states("PIPELINE:abc")["report"] == "COMPLETED"
    assert world.job_of("PIPELINE:abc", "notify")["payload"] == {"rep": None}
    await world.finish("PIPELINE:abc", "notify")
    await world.settle()
    assert await parent.state() == "COMPLETED"


async def test_child_failure_fails_parent_node(make_world: Any) -> None:
    # F-63
    world = make_world(flows())
    parent = await to_child(world)
    await world.finish("REPORTING:abc-report", "r", "FAILED")
    await world.settle()
    node = world.nodes("PIPELINE:abc")["report"]
    assert (node.state, node.error) == ("FAILED", "child run failed: REPORTING:abc-report")
    assert await parent.state() == "FAILED"


async def test_notify_child_ignores_mismatches(make_world: Any) -> None:
    # F-63
    world = make_world(flows())
    parent = await to_child(world)
    await parent.notify_child("report", "REPORTING:other", "COMPLETED")
    await parent.notify_child("report", "REPORTING:abc-report", "RUNNING")
    await parent.notify_child("nope", "REPORTING:abc-report", "COMPLETED")
    assert world.states("PIPELINE:abc")["report"] == "RUNNING"


async def test_cancel_cascades_to_child_run(make_world: Any) -> None:
    # F-64, F-71
    world = make_world(flows())
    parent = await to_child(world)
    await parent.cancel()
    await world.settle()
    assert await world.get("REPORTING:abc-report").state() == "CANCELLED"
    assert world.states("PIPELINE:abc")["report"] == "CANCELLED"
    assert await parent.state() == "CANCELLED"


async def test_parent_deadline_cancels_child(make_world: Any) -> None:
    # F-64, F-74: the child is cancelled, the parent ends FAILED
    fl = flows()
    fl["PIPELINE"].deadline_ms = 1000
    world = make_world(fl)
    parent = world.get("PIPELINE:abc")
    await parent.start("PIPELINE", {})
    await world.settle()
    await world.finish("PIPELINE:abc", "list", result=[])
    await world.settle()
    world.clock.advance(1000)
    await world.settle()
    assert world.states("PIPELINE:abc")["report"] == "CANCELLED"
    assert world.nodes("PIPELINE:abc")["notify"].error == "run deadline exceeded: 1000ms"
    assert await parent.state() == "FAILED"


async def test_depth_limit_fails_the_node(make_world: Any) -> None:
    # F-62, F-61
    world = make_world(flows(), settings=RunSettings(max_depth=0))
    await to_child(world)
    node = world.nodes("PIPELINE:abc")["report"]
    assert (node.state, node.error) == (
        "FAILED",
        "failed to start child run: subflow nesting exceeded the limit: 0",
    )


async def test_resume_resumes_failed_child(make_world: Any) -> None:
    # F-65 (port): the same child id is reused and the FAILED child is resumed, never duplicated
    world = make_world(flows())
    parent = await to_child(world)
    child_id = "REPORTING:abc-report"
    await world.finish(child_id, "r", "FAILED")
    await world.settle()
    assert await parent.state() == "FAILED"
    await parent.retry()
    await world.settle()
    assert await world.get(child_id).state() == "RUNNING"
    assert world.states("PIPELINE:abc")["report"] == "RUNNING"
    await world.finish(child_id, "r")
    await world.settle()
    assert world.states("PIPELINE:abc")["report"] == "COMPLETED"


async def test_child_uses_its_own_deadline(make_world: Any) -> None:
    # F-61: no deadline is passed to the child
    world = make_world(flows(child_deadline=777))
    await to_child(world)
    assert world.get("REPORTING:abc-report").ctx.store.run().deadline_ms == 777
