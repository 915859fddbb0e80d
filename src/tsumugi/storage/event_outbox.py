"""The shard's outboxes of run notifications and notice jobs, drained by its alarm tick.

``run_notify`` (run notifications) and ``notice`` are filled in the same transaction as the terminal
transition that causes them, and drained by the tick; a row is deleted only after its delivery
succeeded (at-least-once).
"""
# F-45, J-180b

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, NotRequired, TypeAlias, TypedDict

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import SqlExecutor
from tsumugi.storage.sql_values import MAX_BOUND_PARAMS, integer


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
        self.sql.execute(
            "INSERT INTO run_notify (run_id, event) VALUES (?, ?)", (run_id, wire_format.dumps(event))
        )

    def add_run_events(self, events: list[RunEvent]) -> None:
        """``add_run_event`` for many events, in order: one ``executemany``."""
        if events:
            self.sql.execute_many(
                "INSERT INTO run_notify (run_id, event) VALUES (?, ?)",
                [(run_id, wire_format.dumps(event)) for run_id, event in events],
            )

    def run_events(self, limit: int) -> list[tuple[int, str, JsonObject]]:
        """The oldest events as ``(seq, run id, event)``, each as it reached JSON and came back."""
        rows = self.sql.execute("SELECT seq, run_id, event FROM run_notify ORDER BY seq LIMIT ?", (limit,))
        return [(integer(s), str(r), _object(wire_format.loads(str(e)))) for s, r, e in rows]

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
