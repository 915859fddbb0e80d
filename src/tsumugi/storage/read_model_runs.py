"""Run queries on the read model: list and detail with nodes."""
# A-59..A-61, F-86, F-87

from __future__ import annotations

from typing import Final

from tsumugi.ports import SqlDatabase, SqlValue

RUN_SUMMARY_COLUMNS: Final = "id, flow, state, node_total, node_done, node_failed, created_at, updated_at"
RUN_DETAIL_COLUMNS: Final = RUN_SUMMARY_COLUMNS + ", input, parent_run_id, parent_node_id"
NODE_COLUMNS: Final = (
    "node_id, binding, state, container, parent, origin, after, job_id, child_run_id, result, error, "
    "position, created_at, updated_at, wait, wait_event, wake_at"
)

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
    nodes = await db.all(
        f"SELECT {NODE_COLUMNS} FROM run_node WHERE run_id = ? ORDER BY position ASC", (run_id,)
    )
    return rows[0], nodes
