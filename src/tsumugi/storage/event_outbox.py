"""The shard's outboxes of run notifications and notice jobs, drained by its alarm tick.

``run_notify`` (run notifications) and ``notice`` are filled in the same transaction as the terminal
transition that causes them, and drained by the tick; a row is deleted only after its delivery
succeeded (at-least-once).
"""
# F-45, J-180b

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple, NotRequired, TypeAlias, TypedDict

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import Row, SqlExecutor, SqlValue
from tsumugi.storage.sql_values import MAX_BOUND_PARAMS, integer, optional_text


class RunJobEvent(TypedDict):
    """What a run learns of its node's job when the job settles (``RunRpc.notify``)."""

    # F-45

    nodeId: str | None
    jobId: str
    state: str
    result: str | None  # the stored result JSON text
    error: str | None
    spawns: NotRequired[Sequence[object]]  # F-55: the spawn requests of a completed attempt


RunEvent: TypeAlias = tuple[str, RunJobEvent]  # (run id, event)
_ADD_RUN_EVENT: Final = (
    "INSERT INTO run_notify (run_id, event, node_id, job_id, state, result, error) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _run_event_values(run_id: str, event: RunJobEvent) -> tuple[SqlValue, ...]:
    """A run event as its row: the fields as columns, a completed attempt's spawns as JSON text."""
    spawns = event.get("spawns")
    spawned = wire_format.dumps(spawns) if spawns else ""
    return (run_id, spawned, event["nodeId"], event["jobId"], event["state"], event["result"], event["error"])


def _stored_event(row: Row) -> JsonObject:
    """The event a ``run_notify`` row holds; a row without ``job_id`` holds the whole event as JSON."""
    _, _, spawned, node_id, job_id, state, result, error = row
    if job_id is None:
        return _object(wire_format.loads(str(spawned)))  # written by an earlier version
    event: JsonObject = {
        "nodeId": optional_text(node_id),
        "jobId": str(job_id),
        "state": optional_text(state),
        "result": optional_text(result),
        "error": optional_text(error),
    }
    if spawned:
        event["spawns"] = wire_format.loads(str(spawned))
    return event


def _object(value: object) -> JsonObject:
    """A stored event or payload: written from a dict, so it reads back as one."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, read {type(value).__name__}")
    return value


class Notice(NamedTuple):
    """A notice job waiting to be enqueued at its target; it keeps the job's traceparent."""

    # J-180b, J-40

    seq: int
    target: str
    notice_id: str
    payload: JsonObject
    traceparent: str | None


class EventOutbox:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def add_run_event(self, run_id: str, event: RunJobEvent) -> None:
        self.add_run_events([(run_id, event)])

    def add_run_events(self, events: list[RunEvent]) -> None:
        """``add_run_event`` for many events, in order: one ``executemany``."""
        if events:
            self.sql.execute_many(
                _ADD_RUN_EVENT, [_run_event_values(run_id, event) for run_id, event in events]
            )

    def run_events(self, limit: int) -> list[tuple[int, str, JsonObject]]:
        """The oldest events as ``(seq, run id, event)``, each event as ``RunRpc.notify`` takes it."""
        rows = self.sql.execute(
            "SELECT seq, run_id, event, node_id, job_id, state, result, error FROM run_notify "
            "ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(integer(row[0]), str(row[1]), _stored_event(row)) for row in rows]

    def delete_run_events(self, seqs: list[int]) -> None:
        _delete_seqs(self.sql, "run_notify", seqs)

    def add_notice(self, target: str, notice_id: str, payload: JsonObject, traceparent: str | None) -> None:
        self.sql.execute(
            "INSERT INTO notice (target, notice_id, payload, traceparent) VALUES (?, ?, ?, ?)",
            (target, notice_id, wire_format.dumps(payload), traceparent),
        )

    def notices(self, limit: int) -> list[Notice]:
        rows = self.sql.execute(
            "SELECT seq, target, notice_id, payload, traceparent FROM notice ORDER BY seq LIMIT ?", (limit,)
        )
        return [
            Notice(
                integer(s),
                str(t),
                str(i),
                _object(wire_format.loads(str(p))),
                None if tp is None else str(tp),
            )
            for s, t, i, p, tp in rows
        ]

    def delete_notices(self, seqs: list[int]) -> None:
        _delete_seqs(self.sql, "notice", seqs)


def _delete_seqs(sql: SqlExecutor, table: str, seqs: list[int]) -> None:
    """Delete rows of an outbox table by ``seq``, one statement per chunk of ids.

    The drains run outside a transaction: a statement per row committed each row on its own.
    """
    for start in range(0, len(seqs), MAX_BOUND_PARAMS):
        part = seqs[start : start + MAX_BOUND_PARAMS]
        sql.execute(f"DELETE FROM {table} WHERE seq IN ({', '.join('?' * len(part))})", part)
