"""The run's outbox as the read model sees it: node marks projected from the node rows (ADR-0168).

F-25, F-35 step 7, F-84: every change reaches the read model, a newer state is never overwritten by an
older one, and a reader that sees the run's counters move sees the nodes that moved them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest

from tsumugi.core import wire_format
from tsumugi.flows import create_flow
from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.read_model_writer import D1ReadModelWriter

flow = create_flow({})
RUN = "WIDE:1"
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED")


def wide() -> Any:
    return flow(lambda f: f.fan_out("each", "Noop", over=lambda i: range(i["n"]), input=lambda item: item))


def world_on_a_read_model(make_world: Any) -> tuple[Any, SqliteDatabase]:
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    world = make_world({"WIDE": wide()})
    world.read_model = D1ReadModelWriter(db)
    return world, db


async def read_model(db: SqliteDatabase) -> tuple[dict[str, Any], dict[str, str]]:
    runs = await db.all("SELECT * FROM run WHERE id = ?", (RUN,))
    nodes = await db.all("SELECT node_id, state FROM run_node WHERE run_id = ?", (RUN,))
    return (runs[0] if runs else {}), {str(n["node_id"]): str(n["state"]) for n in nodes}


async def tick(world: Any) -> None:
    alarm = world.alarms[RUN]
    if alarm.at is not None and alarm.at <= world.clock.now():
        alarm.at = None
        await world.get(RUN).alarm()


async def test_counters_never_run_ahead_of_the_nodes_through_a_long_backlog(make_world: Any) -> None:
    # F-84, ADR-0168: node marks precede the run snapshot they moved, whatever batch boundary falls.
    world, db = world_on_a_read_model(make_world)
    await world.get(RUN).start("WIDE", {"n": 450})
    children = [f"each:{i}" for i in range(450)]
    seen_progress: list[int] = []
    for _ in range(200):
        await tick(world)
        jobs = {n for n, state in world.states(RUN).items() if state == "SCHEDULED"}
        for node_id in sorted(jobs)[:37]:  # uneven groups, so batches split the outbox everywhere
            await world.finish(RUN, node_id)
        run, nodes = await read_model(db)
        if run:
            done = sum(1 for state in nodes.values() if state in TERMINAL)
            assert run["node_done"] <= done, (run["node_done"], done)
            seen_progress.append(int(run["node_done"]))
        if run and run["state"] == "COMPLETED" and world.get(RUN).ctx.outbox.is_empty():
            break
    run, nodes = await read_model(db)
    assert run["state"] == "COMPLETED"
    assert (run["node_total"], run["node_done"], run["node_failed"]) == (451, 451, 0)
    assert {node_id: nodes[node_id] for node_id in children} == dict.fromkeys(children, "COMPLETED")
    assert nodes["each"] == "COMPLETED"
    assert len(set(seen_progress)) > 3  # the counters moved while the run ran, not only at the end


async def test_a_node_changed_twice_before_projection_shows_its_newest_state(make_world: Any) -> None:
    # F-35 step 7, F-84: a child is inserted and scheduled in one tick; its one projection shows both.
    world, db = world_on_a_read_model(make_world)
    await world.get(RUN).start("WIDE", {"n": 3})
    await world.settle()
    _, nodes = await read_model(db)
    assert (
        nodes
        == world.states(RUN)
        == {"each": "RUNNING", **dict.fromkeys(["each:0", "each:1", "each:2"], "SCHEDULED")}
    )
    rows = await db.all("SELECT node_id, job_id FROM run_node WHERE run_id = ? AND node_id != 'each'", (RUN,))
    assert {r["node_id"]: r["job_id"] for r in rows} == {
        n: world.nodes(RUN)[n].job_id for n in nodes if n != "each"
    }
    await world.finish(RUN, "each:1", "FAILED", error="boom")
    await world.settle()
    _, nodes = await read_model(db)
    assert nodes == world.states(RUN)
    rows = await db.all("SELECT error FROM run_node WHERE run_id = ? AND node_id = 'each:1'", (RUN,))
    assert rows[0]["error"] == "boom"


async def test_snapshots_an_earlier_version_left_are_projected_from_the_rows(make_world: Any) -> None:
    # F-27, ADR-0168: an outbox row that still carries a node snapshot projects the node as it is now.
    world, db = world_on_a_read_model(make_world)
    run = world.get(RUN)
    await run.start("WIDE", {"n": 1})
    await world.settle()
    projected = await db.all("SELECT * FROM run_node WHERE run_id = ? AND node_id = 'each:0'", (RUN,))
    stale = {**projected[0], "state": "PENDING"}  # a node snapshot, as an earlier version wrote one
    run.ctx.sql.execute(
        "INSERT INTO run_outbox (kind, target, snapshot) VALUES ('node', 'each:0', ?)",
        [wire_format.dumps(stale)],
    )
    await world.finish(RUN, "each:0")
    await world.settle()
    summary, nodes = await read_model(db)
    assert nodes == {"each": "COMPLETED", "each:0": "COMPLETED"}
    assert summary["state"] == "COMPLETED"
    assert run.ctx.outbox.is_empty()


def change_node(world: Any, error: str) -> None:
    """``each:0``'s error set and its change recorded, in one transaction, as a coordinator would."""
    ctx = world.get(RUN).ctx

    def change() -> None:
        ctx.store.update_node("each:0", world.clock.now(), error=error)
        ctx.record_changes(["each:0"])

    ctx.transaction(change)


class CountingReadModel(D1ReadModelWriter):
    def __init__(self, db: SqliteDatabase) -> None:
        super().__init__(db)
        self.node_upserts: list[str] = []

    async def upsert_run_nodes(self, snapshots: Any) -> None:
        self.node_upserts += [str(s["node_id"]) for s in snapshots]
        await super().upsert_run_nodes(snapshots)


async def test_a_node_waiting_for_projection_is_not_marked_again(make_world: Any) -> None:
    # ADR-0168: a change while the node's mark still waits rides on that mark: one row, one upsert.
    world, db = world_on_a_read_model(make_world)
    counting = world.read_model = CountingReadModel(db)
    run = world.get(RUN)
    await run.start("WIDE", {"n": 450})
    await world.settle()
    # Children past the first tick's 200 projected rows were inserted and scheduled before their one
    # projection: nobody's PENDING state reaches the read model after its SCHEDULED one, and most
    # children are upserted once for both.
    _, nodes = await read_model(db)
    assert nodes == world.states(RUN)
    assert len(counting.node_upserts) < 451 + 200
    for node_id in ("each:0", "each:449"):
        await world.finish(RUN, node_id)
    await world.settle()
    _, nodes = await read_model(db)
    assert (nodes["each:0"], nodes["each:449"]) == ("COMPLETED", "COMPLETED")


async def test_a_mark_rolled_back_is_written_again(make_world: Any) -> None:
    # ADR-0168: after a rollback the outbox is read from storage again, so no change is lost.
    world, db = world_on_a_read_model(make_world)
    run = world.get(RUN)
    await run.start("WIDE", {"n": 1})
    await world.settle()
    ctx = run.ctx

    def marks_then_fails() -> None:
        change_node(world, "first")  # joins the outer transaction, which then rolls back
        raise RuntimeError("the write failed")

    with pytest.raises(RuntimeError):
        ctx.transaction(marks_then_fails)
    change_node(world, "second")
    await ctx.arm(world.clock.now())
    await world.settle()
    rows = await db.all("SELECT error FROM run_node WHERE run_id = ? AND node_id = 'each:0'", (RUN,))
    assert rows[0]["error"] == "second"


async def test_a_change_after_its_mark_was_read_gets_a_mark_of_its_own(make_world: Any) -> None:
    # F-84, ADR-0168: the projection has read the node; a change made then is projected by a later batch.
    world, db = world_on_a_read_model(make_world)
    run = world.get(RUN)
    await run.start("WIDE", {"n": 1})
    await world.settle()
    ctx = run.ctx
    change_node(world, "read")
    batch = ctx.outbox.pending(RUN)
    assert [n["error"] for n in batch.nodes] == ["read"]
    change_node(world, "after")
    ctx.outbox.delete_through(batch.last_seq)  # the first batch went out
    await ctx.arm(world.clock.now())
    await world.settle()
    rows = await db.all("SELECT error FROM run_node WHERE run_id = ? AND node_id = 'each:0'", (RUN,))
    assert rows[0]["error"] == "after"


class FailingOnce(SqliteExecutor):
    """SQLite that fails one statement starting with ``prefix``, the ``nth`` time one is run."""

    def __init__(self, prefix: str, nth: int) -> None:
        super().__init__()
        self.prefix, self.left = prefix, nth

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        if sql.startswith(self.prefix):
            self.left -= 1
            if self.left == 0:
                raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, params)


async def test_a_tick_failing_mid_fan_out_leaves_no_half_of_it(make_world: Any) -> None:
    # F-35, F-38, ADR-0169: a decision round commits whole or not at all; the retried tick does it again.
    world, _ = world_on_a_read_model(make_world)
    storage = FailingOnce("UPDATE node", nth=1)  # the container's move to RUNNING, after its children
    run = world.get(RUN, storage)
    await run.start("WIDE", {"n": 300})
    await tick(world)  # the children are inserted, then the container's update fails: retried later
    assert set(world.states(RUN)) == {"each"}
    assert world.states(RUN)["each"] == "PENDING"
    assert world.shards.all_jobs() == {}
    world.clock.advance(10_000)
    await world.settle()
    states = world.states(RUN)
    assert len(states) == 301
    assert set(states.values()) == {"RUNNING", "SCHEDULED"}
    assert len(world.shards.all_jobs()) == 300
