"""Run queries on the read model: list and detail with nodes."""
# A-59..A-61, F-86, F-87

from __future__ import annotations

import weakref
from typing import Final

from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_schema import RUN_NODE_WAIT_DDL

RUN_SUMMARY_COLUMNS: Final = "id, flow, state, node_total, node_done, node_failed, created_at, updated_at"
RUN_DETAIL_COLUMNS: Final = RUN_SUMMARY_COLUMNS + ", input, parent_run_id, parent_node_id"
NODE_COLUMNS: Final = (
    "n.node_id, n.binding, n.state, n.container, n.parent, n.origin, n.after, n.job_id, n.child_run_id, "
    "n.result, n.error, n.position, n.created_at, n.updated_at, w.wait, w.wait_event, w.wake_at"
)
# ADR-0155: the wait side table is made on demand; a reader makes it too, once per database, so the join
# never meets a missing table.
_WAIT_TABLE_READY: weakref.WeakSet[SqlDatabase] = weakref.WeakSet()

Row = dict[str, SqlValue]


async def list_runs(
    db: SqlDatabase, state: str | None, flow: str | None, limit: int, offset: int
) -> tuple[list[Row], int]:
    """A page of runs, newest update first, and the count of all matching rows."""
    #
    clauses: list[str] = []
    params: list[SqlValue] = []
    if state is not None:
        clauses.append("state = ?")
        params.append(state)
    if flow is not None:
        clauses.append("flow = ?")
        params.append(flow)
    where = " WHERE " + " AND ".join(clauses) if clauses else ""
    rows = await db.all(
        f"SELECT {RUN_SUMMARY_COLUMNS} FROM run{where} ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    count = await db.all(f"SELECT COUNT(*) AS n FROM run{where}", params)
    return rows, int(count[0]["n"] or 0) if count else 0


async def get_run(db: SqlDatabase, run_id: str) -> tuple[Row, list[Row]] | None:
    """The run row and its nodes by ``position``; None when the run row is missing."""
    #
    rows = await db.all(f"SELECT {RUN_DETAIL_COLUMNS} FROM run WHERE id = ?", (run_id,))
    if not rows:
        return None
    if db not in _WAIT_TABLE_READY:
        await db.batch([(RUN_NODE_WAIT_DDL, ())])
        _WAIT_TABLE_READY.add(db)
    nodes = await db.all(
        f"SELECT {NODE_COLUMNS} FROM run_node n LEFT JOIN run_node_wait w "
        "ON w.run_id = n.run_id AND w.node_id = n.node_id WHERE n.run_id = ? ORDER BY n.position ASC",
        (run_id,),
    )
    return rows[0], nodes
