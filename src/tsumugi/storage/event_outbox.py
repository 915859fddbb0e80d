"""Outboxes of events for other actors: run notifications and notices.

Both are filled in the same transaction as the terminal transition and drained by the tick, deleted only
after delivery succeeded (at-least-once).
"""
# F-45, J-180b

from __future__ import annotations

from typing import Any, NamedTuple

from tsumugi.core import jsonwire
from tsumugi.ports import SqlExecutor


class Notice(NamedTuple):
    """A notice job waiting to be enqueued at its target; it keeps the job's traceparent."""

    # J-180b, J-40

    seq: int
    target: str
    notice_id: str
    payload: dict[str, Any]
    traceparent: str | None


class EventOutbox:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def add_run_event(self, run_id: str, event: dict[str, Any]) -> None:
        self.sql.execute(
            "INSERT INTO run_notify (run_id, event) VALUES (?, ?)", (run_id, jsonwire.dumps(event))
        )

    def add_run_events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        """``add_run_event`` for many events, in order: one ``executemany``."""
        if events:
            self.sql.execute_many(
                "INSERT INTO run_notify (run_id, event) VALUES (?, ?)",
                [(run_id, jsonwire.dumps(event)) for run_id, event in events],
            )

    def run_events(self, limit: int) -> list[tuple[int, str, dict[str, Any]]]:
        rows = self.sql.execute("SELECT seq, run_id, event FROM run_notify ORDER BY seq LIMIT ?", (limit,))
        return [(int(s), str(r), jsonwire.loads(str(e))) for s, r, e in rows]  # type: ignore[arg-type]

    def delete_run_events(self, seqs: list[int]) -> None:
        self.sql.execute_many("DELETE FROM run_notify WHERE seq = ?", ((s,) for s in seqs))

    def add_notice(
        self, target: str, notice_id: str, payload: dict[str, Any], traceparent: str | None
    ) -> None:
        self.sql.execute(
            "INSERT INTO notice (target, notice_id, payload, traceparent) VALUES (?, ?, ?, ?)",
            (target, notice_id, jsonwire.dumps(payload), traceparent),
        )

    def notices(self, limit: int) -> list[Notice]:
        rows = self.sql.execute(
            "SELECT seq, target, notice_id, payload, traceparent FROM notice ORDER BY seq LIMIT ?", (limit,)
        )
        return [
            Notice(int(s), str(t), str(i), jsonwire.loads(str(p)), None if tp is None else str(tp))  # type: ignore[arg-type]
            for s, t, i, p, tp in rows
        ]

    def delete_notices(self, seqs: list[int]) -> None:
        self.sql.execute_many("DELETE FROM notice WHERE seq = ?", ((s,) for s in seqs))
