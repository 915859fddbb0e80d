"""The coordinator's kept progress matches storage (ADR-0115; F-26, F-33, F-35, F-56, F-77)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.core.flow.advance import advance
from tsumugi.flows import create_flow
from tsumugi.storage.run_store import node_view

flow = create_flow({})


def _kept_equals_recounted(world: Any, run_id: str) -> None:
    run = world.get(run_id)
    row = run.ctx.store.run()
    nodes = run.ctx.store.nodes()
    expected = advance(
        [node_view(n) for n in nodes], cancelling=bool(row.cancelling), expired=bool(row.expired)
    )
    live = run.ctx.store.live()
    halting = bool(row.cancelling or row.expired)
    assert live.decisions(halting=halting, limit=len(nodes) + 1) == expected.decisions  # F-32
    assert live.state(cancelling=bool(row.cancelling), expired=bool(row.expired)) == expected.state  # F-33
    assert run.ctx.store.counters() == run.ctx.store.counted()  # F-26


async def test_kept_progress_follows_fan_out_spawns_failure_and_retry(make_world: Any) -> None:
    world = make_world(
        {
            "F": flow(
                lambda f: f.node(
                    "b",
                    "B",
                    after={"g": f.fan_out("g", "G", over=lambda: [1, 2, 3], input=lambda v: v)},
                    input=lambda d: d,
                )
            )
        }
    )
    await world.get("F:1").start("F", None)
    await world.settle()
    _kept_equals_recounted(world, "F:1")
    await world.finish("F:1", "g:0", spawns=[{"id": "s", "binding": "S", "payload": None}])  # F-56
    await world.finish("F:1", "g:1", "FAILED", error="boom")
    await world.settle()
    _kept_equals_recounted(world, "F:1")
    await world.finish("F:1", "g:0:s")
    await world.finish("F:1", "g:2")
    await world.settle()
    _kept_equals_recounted(world, "F:1")
    await world.finish("F:1", "b", "FAILED", error="boom")
    await world.settle()
    assert world.get("F:1").ctx.store.run().state == "FAILED"
    assert (await world.get("F:1").retry())["ok"] is True  # F-77
    _kept_equals_recounted(world, "F:1")
    await world.settle()
    _kept_equals_recounted(world, "F:1")
    assert world.states("F:1")["g:1"] == "SCHEDULED"  # F-78: the failed child runs again
    await world.finish("F:1", "g:1")
    await world.settle()
    _kept_equals_recounted(world, "F:1")
    await world.finish("F:1", "b")
    await world.settle()
    assert world.get("F:1").ctx.store.run().state == "COMPLETED"
    _kept_equals_recounted(world, "F:1")


async def test_a_rolled_back_write_drops_the_kept_progress(make_world: Any) -> None:
    # ADR-0115: storage stays the truth; a failed transaction is re-read, never trusted from memory
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: 1))})
    run = world.get("F:1")
    await run.start("F", None)
    await world.settle()
    kept = run.ctx.store.live()

    def failing() -> None:
        run.ctx.store.update_node("a", world.clock.now(), state="FAILED")
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        run.ctx.transaction(failing)
    assert run.ctx.store.live() is not kept
    assert run.ctx.store.live().by_id["a"].state == "SCHEDULED"
    _kept_equals_recounted(world, "F:1")
