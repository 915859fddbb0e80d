"""Runs in the read model: the rows a run and its nodes' snapshots become, and the list and detail queries.

``read_model_writer.D1ReadModelWriter`` upserts the rows, guarded by ``seq``.
"""
# A-59..A-61, F-84, F-86, F-87, D-4

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Final

from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_schema import (
    RUN_COLUMNS,
    RUN_FROZEN_COLUMNS,
    RUN_NODE_COLUMNS,
    RUN_NODE_FROZEN_COLUMNS,
    RUN_NODE_WAIT_COLUMNS,
    RUN_NODE_WAIT_DDL,
    json_text,
    sql_value,
    upsert_sql,
)

UPSERT_RUN_SQL: Final = upsert_sql("run", RUN_COLUMNS, ("id",), RUN_FROZEN_COLUMNS)
UPSERT_RUN_NODE_SQL: Final = upsert_sql(
    "run_node", RUN_NODE_COLUMNS, ("run_id", "node_id"), RUN_NODE_FROZEN_COLUMNS
)
UPSERT_RUN_NODE_WAIT_SQL: Final = upsert_sql(
    "run_node_wait", RUN_NODE_WAIT_COLUMNS, ("run_id", "node_id"), frozenset({"run_id", "node_id"})
)

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


def run_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for one run snapshot; ``input`` is JSON text (a ``null`` input is the text ``null``)."""
    values: dict[str, object] = dict(snapshot)
    values["input"] = json_text(snapshot.get("input")) or "null"
    return _bound(values, RUN_COLUMNS)


def run_node_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for one node snapshot; ``after`` is stored as JSON array text."""
    # D-4
    row = tuple(map(snapshot.get, RUN_NODE_COLUMNS))
    if (
        type(row[_AFTER]) is str
        and row[_AFTER]
        and row[_CONTAINER] in _FLAGS
        and type(row[_RESULT]) in _TEXT_OR_NONE
        and _SCALARS.issuperset(map(type, row))
    ):
        return row  # type: ignore[return-value]  # as a run's outbox reads it: JSON as text, 0 or 1
    values: dict[str, object] = dict(snapshot)
    values["after"] = json_text(snapshot.get("after")) or "[]"
    values["result"] = json_text(snapshot.get("result"))
    values["container"] = 1 if snapshot.get("container") else 0
    return _bound(values, RUN_NODE_COLUMNS)


_SCALARS: Final = frozenset({str, int, float, type(None)})  # bound as they are (a bool is not one)
_AFTER, _CONTAINER, _RESULT = (RUN_NODE_COLUMNS.index(c) for c in ("after", "container", "result"))
_FLAGS: Final = (0, 1)
_TEXT_OR_NONE: Final = (str, type(None))


def _bound(values: Mapping[str, object], columns: tuple[str, ...]) -> tuple[SqlValue, ...]:
    """``values`` of ``columns`` as bound parameters: as they are when all are SQL scalars (nearly
    always: one check in C), else each through ``sql_value``."""
    row = tuple(map(values.get, columns))
    if _SCALARS.issuperset(map(type, row)):
        return row  # type: ignore[return-value]  # every value's type was just checked
    return tuple(sql_value(value) for value in row)


def run_node_wait_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for what a waiting node waits for (ADR-0155)."""
    return tuple(sql_value(snapshot.get(column)) for column in RUN_NODE_WAIT_COLUMNS)


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
