"""A fan-out stopped by the run deadline (F-32 step 1, F-33, F-73, F-74, F-76), on a FixedClock."""

from __future__ import annotations

from typing import Any

from tsumugi.core import wire_format
from tsumugi.flows import create_flow

flow = create_flow({})
DEADLINE_MS = 10_000
DEADLINE_ERROR = "run deadline exceeded: 10000ms"


def fan_out(*, report: bool) -> Any:
    """``greet`` over the run input's names, optionally followed by ``report``."""

    def build(f: Any) -> None:
        each = f.fan_out("greet", "Greet", over=lambda i: i["names"], input=lambda name: {"name": name})
        if report:
            f.node("report", "Report", after={"each": each}, input=lambda _i, d: d["each"])

    return flow(build, deadline_ms=DEADLINE_MS)


async def expired_mid_fan_out(world: Any) -> Any:
    """Start ``F:1`` over three names; ``greet:0`` completes, ``greet:1`` is running at the deadline."""
    run = world.get("F:1")
    await run.start("F", {"names": ["al", "bo", "cy"]})
    await world.settle()
    assert world.states("F:1")["greet"] == "RUNNING"
    await world.finish("F:1", "greet:0", result="sent")
    await world.settle()
    running = world.nodes("F:1")["greet:1"].job_id
    world.shards.get(running.split(":")[0]).running.add(running)
    # F-73: a quiet run wakes at its deadline
    assert world.alarms["F:1"].at == run.ctx.store.run().deadline_at
    world.clock.advance(DEADLINE_MS)  # deadline_at <= now counts as expired
    await world.settle()
    return run


async def test_container_stopped_by_the_deadline_aggregates_and_the_flag_fails_the_run(
    make_world: Any,
) -> None:
    # F-76, F-74, F-33, F-32 step 1: every root succeeds, yet the expired run ends FAILED
    world = make_world({"F": fan_out(report=False)})
    run = await expired_mid_fan_out(world)
    nodes = world.nodes("F:1")
    assert run.ctx.store.run().expired == 1
    assert (nodes["greet:2"].state, nodes["greet:2"].error) == ("FAILED", DEADLINE_ERROR)  # stopped, F-74
    assert nodes["greet:1"].state == "SCHEDULED"  # a running job is waited for, not interrupted (F-70)
    assert nodes["greet"].state == "RUNNING"  # the container waits for its last child (F-30)
    assert await run.state() == "RUNNING"
    await world.finish("F:1", "greet:1", result="sent")
    await world.settle()
    greet = world.nodes("F:1")["greet"]
    assert greet.state == "COMPLETED"  # aggregated while halting
    assert wire_format.loads(greet.result) == {"total": 3, "succeeded": 2, "failed": 1}
    assert await run.state() == "FAILED"  # F-33: because of the flag; the only root succeeded
    assert world.read_model.runs[-1]["state"] == "FAILED"


async def test_same_fan_out_without_the_deadline_completes(make_world: Any) -> None:
    # F-76 contrast, F-53: the same child outcomes without expiry leave the run COMPLETED
    world = make_world({"F": fan_out(report=False)})
    run = world.get("F:1")
    await run.start("F", {"names": ["al", "bo", "cy"]})
    await world.settle()
    await world.finish("F:1", "greet:0", result="sent")
    await world.finish("F:1", "greet:1", result="sent")
    await world.finish("F:1", "greet:2", "FAILED", error=DEADLINE_ERROR)
    await world.settle()
    assert wire_format.loads(world.nodes("F:1")["greet"].result) == {"total": 3, "succeeded": 2, "failed": 1}
    assert await run.state() == "COMPLETED"


async def test_dependent_of_a_deadline_stopped_container_never_starts(make_world: Any) -> None:
    # F-76, F-74, F-71: the container still aggregates, but its PENDING dependent is stopped, not started
    world = make_world({"F": fan_out(report=True)})
    run = await expired_mid_fan_out(world)
    report = world.nodes("F:1")["report"]
    assert (report.state, report.error, report.job_id) == ("FAILED", DEADLINE_ERROR, None)
    await world.finish("F:1", "greet:1")
    await world.settle()
    states = world.states("F:1")
    assert (states["greet"], states["report"]) == ("COMPLETED", "FAILED")
    assert "report" not in {job["nodeId"] for job in world.shards.all_jobs().values()}
    assert await run.state() == "FAILED"
