"""The read model's writer process projects a run from the run's file, beside its coordinator (ADR-0179).

A real runtime on a real state directory: a fan-out run settles while the writer process reads the
outbox rows each tick took, and their nodes, from the run's file; the run only deletes what was written.
"""

from __future__ import annotations

import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from tests import polling

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.runtimes.local import read_model_process
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.run_outbox import RunOutbox, pending_through
from tsumugi.storage.run_schema import ensure_run_schema

DEADLINE_S = 20.0
CHILDREN = 450  # more than two projection batches of marks


class Quick(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, int]:
        return {"n": payload["n"]}


flow = create_flow({"Quick": Quick})


@flow
def WIDE(f: FlowBuilder) -> None:
    items = f.fan_out(
        "each", "Quick", over=lambda i, d: range(i["n"]), input=lambda item, i, index: {"n": item}
    )
    f.node("after", "Quick", after={"items": items}, input=lambda i, d: {"n": d["items"]["total"]})


APP = define_tsumugi(performers={"Quick": Quick}, flows={"WIDE": WIDE}, runs={"max_nodes": 1000})


def _runtime(state: Path) -> LocalRuntime:
    return LocalRuntime(APP, state, exports={"Quick": Quick}, cron=False)


def _listed(state: Path, run_id: str) -> tuple[tuple[str | None, int], dict[str, str]]:
    """The read model's run (its state and done counter), and its nodes' states by id."""
    with closing(sqlite3.connect(state / "read_model.sqlite3", timeout=5)) as db:
        run = db.execute("SELECT state, node_done FROM run WHERE id = ?", (run_id,)).fetchone()
        nodes = db.execute("SELECT node_id, state FROM run_node WHERE run_id = ?", (run_id,))
        return (str(run[0]), int(run[1])) if run else (None, 0), {str(n): str(s) for n, s in nodes}


async def _run_listed_completed(runtime: LocalRuntime, state: Path) -> dict[str, str]:
    run_id = await APP.start(runtime.env, "WIDE", {"n": CHILDREN})
    nodes: dict[str, str] = {}

    def listed() -> bool:
        nonlocal nodes
        (run_state, done), nodes = _listed(state, run_id)
        return run_state == "COMPLETED" and done == CHILDREN + 2 and len(nodes) == CHILDREN + 2

    await polling.until(listed, "the run listed COMPLETED with every node", DEADLINE_S)
    return nodes


async def test_a_fan_out_run_is_listed_without_its_coordinator_reading_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: RunOutbox, run_id: str, limit: int = 200) -> object:
        raise AssertionError("the run read its own snapshots")

    monkeypatch.setattr(RunOutbox, "pending", refuse)
    async with _runtime(tmp_path) as runtime:
        nodes = await _run_listed_completed(runtime, tmp_path)
    assert set(nodes.values()) == {"COMPLETED"}
    assert nodes["each:0"] == nodes[f"each:{CHILDREN - 1}"] == nodes["after"] == "COMPLETED"


async def test_without_a_writer_process_a_run_projects_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        raise OSError("no processes left")

    monkeypatch.setattr(read_model_process.subprocess, "Popen", refuse)
    async with _runtime(tmp_path) as runtime:
        nodes = await _run_listed_completed(runtime, tmp_path)
    assert set(nodes.values()) == {"COMPLETED"} and len(nodes) == CHILDREN + 2


def _outbox(path: Path) -> tuple[SqliteExecutor, RunOutbox]:
    """A run's storage with two PENDING nodes, ``a`` and ``b``, and its outbox."""
    sql = SqliteExecutor(path)
    ensure_run_schema(sql)
    for node_id in ("a", "b"):
        sql.execute(
            "INSERT INTO node (id, binding, state, origin, seq, created_at, updated_at) "
            "VALUES (?, 'Quick', 'PENDING', 'static', 1, 5, 5)",
            [node_id],
        )
    return sql, RunOutbox(sql)


def test_a_node_changed_after_its_marks_were_taken_is_marked_again(tmp_path: Path) -> None:
    sql, outbox = _outbox(tmp_path / "run.sqlite3")
    outbox.mark_nodes(["a", "b"])
    outbox.mark_nodes(["a"])  # still waiting: no second mark
    assert outbox.take(limit=1) == (1, 1)  # the projection elsewhere takes a's mark only
    outbox.mark_nodes(["a", "b"])  # a moves on while it is on its way; b's mark still waits
    assert [row[0] for row in sql.execute("SELECT target FROM run_outbox ORDER BY seq")] == ["a", "b", "a"]


def test_a_projection_beside_reads_only_the_rows_taken(tmp_path: Path) -> None:
    sql, outbox = _outbox(tmp_path / "run.sqlite3")
    outbox.mark_nodes(["a"])
    last_seq, rows = outbox.take()
    outbox.mark_nodes(["b"])  # after the take: left for the next projection
    sql.execute("UPDATE node SET state = 'SCHEDULED' WHERE id = 'a'")
    batch = pending_through(sql, "WIDE:x", last_seq)
    assert (batch.last_seq, batch.rows) == (last_seq, rows) == (1, 1)
    assert [(n["node_id"], n["state"], n["run_id"], n["seq"]) for n in batch.nodes] == [
        ("a", "SCHEDULED", "WIDE:x", 1)
    ]
    outbox.delete_through(last_seq)
    assert outbox.take() == (2, 1)  # b's mark, for the next projection
