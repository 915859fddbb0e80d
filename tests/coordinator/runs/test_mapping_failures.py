"""Exceptions from mapping functions fail their node, not the tick (F-44; ADR-0073).

v0.6.0 lets such an exception abort every tick of the run (F-38 loop). The port fails only the node
whose mapping code raised, with the exception's message; independent branches keep running.
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.flows import create_flow

flow = create_flow({})


class Refused(Exception):
    """What the user's mapping code raises in these tests."""


def refuse(*_args: Any) -> Any:
    raise Refused("no address for this tenant")


def branches(**first: Any) -> Any:
    """``first`` (job node built from ``first``) -> ``after_first``; ``side`` is independent."""

    def build(f: Any) -> None:
        options = {"input": lambda: {"n": 1}, **first}
        head = f.node("first", "Mail", **options)
        f.node("after_first", "Mail", after={"first": head}, input=lambda: {})
        f.node("side", "Audit", input=lambda: {"side": True})

    return flow(build)


def node_jobs(world: Any) -> set[str]:
    """The node ids that got a job enqueued on any shard."""
    return {job["nodeId"] for job in world.shards.all_jobs().values()}


@pytest.mark.parametrize(
    "first",
    [
        pytest.param({"input": refuse}, id="input"),
        pytest.param({"concurrency_key": refuse}, id="concurrency-key"),
    ],
)
async def test_raising_job_mapper_fails_only_its_node(make_world: Any, first: dict[str, Any]) -> None:
    # F-44 (ADR-0073), F-40: `input` and the concurrency-key function are evaluated when the node starts
    world = make_world({"F": branches(**first)})
    run = world.get("F:1")
    await run.start("F", {})
    await world.settle()
    nodes = world.nodes("F:1")
    assert (nodes["first"].state, nodes["first"].error, nodes["first"].job_id) == (
        "FAILED",
        "no address for this tenant",
        None,
    )
    assert nodes["after_first"].state == "SKIPPED"  # F-59: its dependency did not succeed
    assert nodes["side"].state == "SCHEDULED"  # the independent branch was not held up
    assert node_jobs(world) == {"side"}
    # The tick itself succeeded: no F-38 retry alarm; the run just waits for `side`.
    assert world.alarms["F:1"].at is None
    assert await run.state() == "RUNNING"
    await world.finish("F:1", "side")
    await world.settle()
    assert await run.state() == "FAILED"
    snapshot = [n for n in world.read_model.nodes if n["node_id"] == "first"][-1]
    assert (snapshot["state"], snapshot["error"]) == ("FAILED", "no address for this tenant")


def fan_out_flow(**fan: Any) -> Any:
    """``list`` -> fan-out ``greet`` over ``list``'s names -> ``report``."""

    def build(f: Any) -> None:
        names = f.node("list", "ListNames", input=lambda: {})
        options = {"over": lambda _i, d: d["list"], "input": lambda name: {"name": name}, **fan}
        each = f.fan_out("greet", "Greet", after={"list": names}, **options)
        f.node("report", "Report", after={"each": each}, input=lambda _i, d: d["each"])

    return flow(build)


def on_second_item(value: Any, index: int) -> Any:
    """A per-item mapper that works for the first item and raises for the second."""
    if index == 1:
        raise Refused(f"cannot map item {value}")
    return f"k{index}"


@pytest.mark.parametrize(
    ("fan", "error"),
    [
        pytest.param({"over": refuse}, "no address for this tenant", id="over"),
        pytest.param(
            {"input": lambda name, _i, index: on_second_item(name, index)},
            "cannot map item bo",
            id="item-input",
        ),
        pytest.param({"key": on_second_item}, "cannot map item bo", id="key"),
        pytest.param({"concurrency_key": on_second_item}, "cannot map item bo", id="child-concurrency-key"),
    ],
)
async def test_raising_fan_out_mapper_fails_the_container_with_no_children(
    make_world: Any, fan: dict[str, Any], error: str
) -> None:
    # F-44 (ADR-0073), F-49: nothing of a failed expansion is inserted, not even the items mapped before
    world = make_world({"G": fan_out_flow(**fan)})
    run = world.get("G:1")
    await run.start("G", {})
    await world.settle()
    await world.finish("G:1", "list", result=["al", "bo", "cy"])
    await world.settle()
    assert world.states("G:1") == {"list": "COMPLETED", "greet": "FAILED", "report": "SKIPPED"}
    assert world.nodes("G:1")["greet"].error == error
    assert node_jobs(world) == {"list"}  # no child and no `report` job was ever enqueued
    assert await run.state() == "FAILED"
    # The tick succeeded: the next alarm is the sweep, not the F-38 tick-retry beat.
    assert world.alarms["G:1"].at == run.ctx.store.run().updated_at + world.settings.failed_retention_ms
    assert run.ctx.store.counters() == (3, 3, 1)  # F-26: total, done, failed; no child row exists


async def test_raising_subflow_input_fails_the_node_and_starts_no_child(make_world: Any) -> None:
    # F-44 (ADR-0073), F-36 `startRun`: the child's input is evaluated before the child is started
    child = flow(lambda f: f.node("c", "C", input=lambda: {}))

    def build(f: Any) -> None:
        sub = f.subflow("sub", child, input=refuse)
        f.node("after_sub", "Mail", after={"sub": sub}, input=lambda: {})
        f.node("side", "Audit", input=lambda: {})

    world = make_world({"P": flow(build), "C": child})
    run = world.get("P:1")
    await run.start("P", {})
    await world.settle()
    nodes = world.nodes("P:1")
    assert (nodes["sub"].state, nodes["sub"].error) == ("FAILED", "no address for this tenant")
    assert nodes["sub"].child_run_id is None  # the node never names a child run that was not started
    assert nodes["after_sub"].state == "SKIPPED"
    assert nodes["side"].state == "SCHEDULED"
    assert set(world.coordinators) == {"P:1"}  # no child run coordinator was ever addressed
    await world.finish("P:1", "side")
    await world.settle()
    assert await run.state() == "FAILED"


@pytest.mark.parametrize("halt", ["cancel", "deadline"])
async def test_halting_run_never_calls_mapping_functions(make_world: Any, halt: str) -> None:
    # F-44: halting does not call mapping functions, so a raising mapper cannot decide the outcome
    calls: list[str] = []

    def counted_refusal(*_args: Any) -> Any:
        calls.append("input")
        raise Refused("must not be called")

    def build(f: Any) -> None:
        head = f.node("first", "Mail", input=lambda: {})
        f.node("second", "Mail", after={"first": head}, input=counted_refusal)

    world = make_world({"F": flow(build, deadline_ms=10_000)})
    run = world.get("F:1")
    await run.start("F", {})
    await world.settle()
    job_id = world.nodes("F:1")["first"].job_id
    world.shards.get(job_id.split(":")[0]).running.add(job_id)  # the job is running: cancel is only requested
    if halt == "cancel":
        assert await run.cancel() == {"ok": True}
    else:
        world.clock.advance(10_000)
    await world.settle()
    await world.finish("F:1", "first")
    await world.settle()
    second = world.nodes("F:1")["second"]
    expected = ("CANCELLED", None) if halt == "cancel" else ("FAILED", "run deadline exceeded: 10000ms")
    assert (second.state, second.error) == expected
    assert calls == []
    assert await run.state() == ("CANCELLED" if halt == "cancel" else "FAILED")


async def test_resume_after_the_code_is_fixed_runs_the_node(make_world: Any) -> None:
    # F-44 (ADR-0073), F-77, F-40: the failed node is reset and built again from the current code
    flows: dict[str, Any] = {"F": branches(input=refuse)}
    world = make_world(flows)
    run = world.get("F:1")
    await run.start("F", {"to": "a@example.com"})
    await world.settle()
    await world.finish("F:1", "side")
    await world.settle()
    assert await run.state() == "FAILED"
    flows["F"] = branches(input=lambda i: {"to": i["to"]})
    assert await run.retry() == {"ok": True}
    await world.settle()
    assert world.states("F:1") == {"first": "SCHEDULED", "after_first": "PENDING", "side": "COMPLETED"}
    assert world.job_of("F:1", "first")["payload"] == {"to": "a@example.com"}
    await world.finish("F:1", "first")
    await world.settle()
    await world.finish("F:1", "after_first")
    await world.settle()
    assert await run.state() == "COMPLETED"
