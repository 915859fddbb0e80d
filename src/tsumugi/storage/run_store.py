"""Rows of one run: the run row, its nodes and the progress counters (F-23, F-24, F-26)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from tsumugi.ports import SqlExecutor, SqlValue

DONE_STATES: Final = ("COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED")  # F-26 node_done
FAILED_STATES: Final = ("FAILED", "STALLED")  # F-26 node_failed


@dataclass(frozen=True, slots=True)
class RunRow:
    id: str
    flow: str
    state: str
    input: str
    shape: str
    cancelling: int
    created_at: int
    updated_at: int
    parent_run_id: str | None
    parent_node_id: str | None
    depth: int
    parent_notified: int
    deadline_ms: int | None
    deadline_at: int | None
    expired: int


@dataclass(frozen=True, slots=True)
class NodeRow:
    id: str
    binding: str
    state: str
    container: int
    parent: str | None
    origin: str
    after: str
    payload: str | None
    options: str | None
    job_id: str | None
    result: str | None
    error: str | None
    seq: int
    created_at: int
    updated_at: int
    subflow: str | None
    child_run_id: str | None
    trigger: str


RUN_COLUMNS: Final = tuple(f.name for f in fields(RunRow))
NODE_COLUMNS: Final = tuple(f.name for f in fields(NodeRow))
_NODE_SELECT: Final = f"SELECT {', '.join(NODE_COLUMNS)} FROM node"


class RunStore:
    """Named queries over the run's own SQLite. Every method is synchronous (STYLE.md)."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def run(self) -> RunRow | None:
        rows = self.sql.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM run LIMIT 1")
        return RunRow(*rows[0]) if rows else None  # type: ignore[arg-type]

    def insert_run(self, values: Mapping[str, SqlValue]) -> None:
        names = list(values)
        self.sql.execute(
            f"INSERT INTO run ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [values[n] for n in names],
        )

    def update_run(self, now_ms: int, **values: SqlValue) -> None:
        """Set columns of the run row and touch ``updated_at``."""
        values["updated_at"] = now_ms
        assignments = ", ".join(f"{name} = ?" for name in values)
        self.sql.execute(f"UPDATE run SET {assignments}", list(values.values()))

    def nodes(self) -> list[NodeRow]:
        """Every node in ``(seq, id)`` order, the order ``advance`` reads them in (F-24)."""
        return [NodeRow(*r) for r in self.sql.execute(f"{_NODE_SELECT} ORDER BY seq, id")]  # type: ignore[arg-type]

    def node(self, node_id: str) -> NodeRow | None:
        rows = self.sql.execute(f"{_NODE_SELECT} WHERE id = ?", [node_id])
        return NodeRow(*rows[0]) if rows else None  # type: ignore[arg-type]

    def children(self, parent: str) -> list[NodeRow]:
        return [
            NodeRow(*r)  # type: ignore[arg-type]
            for r in self.sql.execute(f"{_NODE_SELECT} WHERE parent = ? ORDER BY seq, id", [parent])
        ]

    def node_count(self) -> int:
        return int(self.sql.execute("SELECT COUNT(*) FROM node")[0][0] or 0)

    def next_seq(self) -> int:
        return int(self.sql.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM node")[0][0] or 0)

    def insert_nodes(self, rows: Iterable[Mapping[str, SqlValue]]) -> list[str]:
        """Insert-or-ignore on ``id`` (the first writer wins, F-24); returns the ids actually inserted."""
        inserted: list[str] = []
        for values in rows:
            names = list(values)
            before = self.sql.execute("SELECT 1 FROM node WHERE id = ?", [values["id"]])
            if before:
                continue
            self.sql.execute(
                f"INSERT INTO node ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [values[n] for n in names],
            )
            inserted.append(str(values["id"]))
        return inserted

    def update_node(self, node_id: str, now_ms: int, **values: SqlValue) -> None:
        values["updated_at"] = now_ms
        assignments = ", ".join(f"{name} = ?" for name in values)
        self.sql.execute(f"UPDATE node SET {assignments} WHERE id = ?", [*values.values(), node_id])

    def update_node_in_state(self, node_id: str, expected: str, now_ms: int, **values: SqlValue) -> bool:
        """Update only while the node is still in ``expected``; False when something moved it first."""
        node = self.node(node_id)
        if node is None or node.state != expected:
            return False
        self.update_node(node_id, now_ms, **values)
        return True

    def counters(self) -> tuple[int, int, int]:
        """``(node_total, node_done, node_failed)`` (F-26)."""
        row = self.sql.execute(
            "SELECT COUNT(*), "
            f"SUM(CASE WHEN state IN ({', '.join('?' * len(DONE_STATES))}) THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN state IN ({', '.join('?' * len(FAILED_STATES))}) THEN 1 ELSE 0 END) FROM node",
            [*DONE_STATES, *FAILED_STATES],
        )[0]
        return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)

    def delete_everything(self) -> None:
        """The sweep (F-82): afterwards the run behaves as never created; empty tables stay."""
        for table in ("node", "run_outbox", "run"):
            self.sql.execute(f"DELETE FROM {table}")


def node_snapshot(run_id: str, node: NodeRow) -> dict[str, Any]:
    """The read-model view of a node (F-25); job results stay in the jobs read model."""
    return {
        "run_id": run_id,
        "node_id": node.id,
        "binding": node.binding,
        "state": node.state,
        "container": node.container,
        "parent": node.parent,
        "origin": node.origin,
        "after": node.after,
        "job_id": node.job_id,
        "child_run_id": node.child_run_id,
        "result": node.result if node.container else None,
        "error": node.error,
        "position": node.seq,
        "created_at": node.created_at,
        "updated_at": node.updated_at,
    }


def run_snapshot(run: RunRow, counters: tuple[int, int, int]) -> dict[str, Any]:
    """The read-model view of the run (F-25)."""
    total, done, failed = counters
    return {
        "id": run.id,
        "flow": run.flow,
        "state": run.state,
        "input": run.input,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "node_total": total,
        "node_done": done,
        "node_failed": failed,
        "parent_run_id": run.parent_run_id,
        "parent_node_id": run.parent_node_id,
    }
