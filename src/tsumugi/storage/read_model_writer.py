"""Projection into the D1-shaped read model: seq-guarded upserts of jobs, runs and nodes."""
# J-192, F-84

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Final

from tsumugi.core import jsonwire
from tsumugi.core.json_types import JsonScalar
from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_schema import (
    JOB_COLUMNS,
    JOB_FROZEN_COLUMNS,
    RUN_COLUMNS,
    RUN_FROZEN_COLUMNS,
    RUN_NODE_COLUMNS,
    RUN_NODE_FROZEN_COLUMNS,
    RUN_NODE_WAIT_COLUMNS,
    RUN_NODE_WAIT_DDL,
    TERMINAL_JOB_STATES,
    upsert_sql,
)

_JOB_KEYS: Final = frozenset(JOB_COLUMNS)
UPSERT_JOB_SQL: Final = upsert_sql("job", JOB_COLUMNS, ("id",), JOB_FROZEN_COLUMNS)
UPSERT_RUN_SQL: Final = upsert_sql("run", RUN_COLUMNS, ("id",), RUN_FROZEN_COLUMNS)
UPSERT_RUN_NODE_SQL: Final = upsert_sql(
    "run_node", RUN_NODE_COLUMNS, ("run_id", "node_id"), RUN_NODE_FROZEN_COLUMNS
)
UPSERT_RUN_NODE_WAIT_SQL: Final = upsert_sql(
    "run_node_wait", RUN_NODE_WAIT_COLUMNS, ("run_id", "node_id"), frozenset({"run_id", "node_id"})
)
# D-9: one sweep run deletes at most `limit` terminal rows; the state index finds them.
SWEEP_JOBS_SQL: Final = (
    "DELETE FROM job WHERE id IN (SELECT id FROM job WHERE state IN (?, ?, ?, ?) AND updated_at < ? LIMIT ?)"
)


def _json_text(value: object) -> str | None:
    """Stored JSON columns hold text; a snapshot may carry the text or the decoded value."""
    #
    if value is None:
        return None
    return value if isinstance(value, str) else jsonwire.dumps(value)


def _sql_value(value: object) -> SqlValue:
    if isinstance(value, bool):
        return int(value)
    if value is None or isinstance(value, int | float | str | bytes):
        return value
    return jsonwire.dumps(value)


_job_values = operator.itemgetter(*JOB_COLUMNS)  # in C
_SCALARS: Final = (str, int, float, type(None))


class ScalarSnapshot(dict[str, JsonScalar]):
    """A job snapshot with every D1 column, each already a SQL scalar (JSON columns as text).

    A shard builds one from its own row, whose values SQLite gave it, so ``job_row`` binds it as it is,
    without checking each value (ADR-0158); any other mapping is checked and converted.
    """

    __slots__ = ()


def job_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for one job snapshot: JSON columns as text, an empty attempt list as NULL."""
    # J-190
    if type(snapshot) is ScalarSnapshot:
        shard_values: tuple[SqlValue, ...] = _job_values(snapshot)
        return shard_values
    if snapshot.keys() >= _JOB_KEYS and snapshot["payload"] is not None and snapshot["attempts_log"] != []:
        # A shard's snapshot: every column present and already text or a number (ADR-0136).
        values: tuple[SqlValue, ...] = _job_values(snapshot)  # each checked next
        if all(type(value) in _SCALARS for value in values):
            return values
    return _job_row_converted(snapshot)


def _job_row_converted(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    log = snapshot.get("attempts_log")
    converted: dict[str, object] = dict(snapshot)
    converted["payload"] = _json_text(snapshot.get("payload", "null")) or "null"
    converted["result"] = _json_text(snapshot.get("result"))
    converted["attempts_log"] = None if not log else _json_text(log)
    return tuple(_sql_value(converted.get(column)) for column in JOB_COLUMNS)


def run_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for one run snapshot; ``input`` is JSON text (a ``null`` input is the text ``null``)."""
    values: dict[str, object] = dict(snapshot)
    values["input"] = _json_text(snapshot.get("input")) or "null"
    return tuple(_sql_value(values.get(column)) for column in RUN_COLUMNS)


def run_node_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for one node snapshot; ``after`` is stored as JSON array text."""
    # D-4
    values: dict[str, object] = dict(snapshot)
    values["after"] = _json_text(snapshot.get("after")) or "[]"
    values["result"] = _json_text(snapshot.get("result"))
    values["container"] = 1 if snapshot.get("container") else 0
    return tuple(_sql_value(values.get(column)) for column in RUN_NODE_COLUMNS)


def run_node_wait_row(snapshot: Mapping[str, object]) -> tuple[SqlValue, ...]:
    """Bind values for what a waiting node waits for (ADR-0155)."""
    return tuple(_sql_value(snapshot.get(column)) for column in RUN_NODE_WAIT_COLUMNS)


class D1ReadModelWriter:
    """``ports.ReadModelWriter`` over any ``SqlDatabase`` (D1 or the local SQLite file).

    Every snapshot carries ``seq``, the outbox sequence of its coordinator; a row only moves forward, so a
    replayed or reordered batch is a no-op.
    """

    # D-9

    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    async def upsert_jobs(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if snapshots:
            await self._db.batch([(UPSERT_JOB_SQL, job_row(s)) for s in snapshots])

    async def upsert_runs(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if snapshots:
            await self._db.batch([(UPSERT_RUN_SQL, run_row(s)) for s in snapshots])

    async def upsert_run_nodes(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        if not snapshots:
            return
        statements: list[tuple[str, Sequence[SqlValue]]] = [
            (UPSERT_RUN_NODE_SQL, run_node_row(s)) for s in snapshots
        ]
        waits = [s for s in snapshots if s.get("wait") is not None]
        if waits:  # ADR-0155: the side table exists once a run has waited
            statements.append((RUN_NODE_WAIT_DDL, ()))
            statements += [(UPSERT_RUN_NODE_WAIT_SQL, run_node_wait_row(s)) for s in waits]
        await self._db.batch(statements)

    async def delete_terminal_jobs(self, before_ms: int, limit: int) -> int:
        """Delete at most ``limit`` terminal job rows last updated before ``before_ms``."""
        # J-172
        return await self._db.run(SWEEP_JOBS_SQL, (*TERMINAL_JOB_STATES, before_ms, limit))
