"""The waiting nodes of a run and the events sent to it (ADR-0147, ADR-0148)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tsumugi.ports import SqlExecutor
from tsumugi.storage.run_store import NODE_COLUMNS, NodeRow

_NODE_SELECT: Final = f"SELECT {', '.join(NODE_COLUMNS)} FROM node"


@dataclass(frozen=True, slots=True)
class KeptEvent:
    """An event sent to the run (ADR-0148); ``node_id`` is set once a node took it."""

    event: str
    payload: str | None
    received_at: int
    node_id: str | None


class RunWaitStore:
    """Named queries over the run's waiting nodes and ``run_event``; synchronous like ``RunStore``."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def due_waits(self, now_ms: int) -> list[NodeRow]:
        """Waiting nodes whose ``wake_at`` has come."""
        query = f"{_NODE_SELECT} WHERE wake_at IS NOT NULL AND wake_at <= ? AND state = 'RUNNING'"
        query += " ORDER BY seq, id"
        return [NodeRow(*r) for r in self.sql.execute(query, [now_ms])]  # type: ignore[arg-type]

    def earliest_wake(self) -> int | None:
        """The soonest ``wake_at`` of a node still waiting: where the run's alarm sits."""
        rows = self.sql.execute(
            "SELECT MIN(wake_at) FROM node WHERE wake_at IS NOT NULL AND state = 'RUNNING'"
        )
        value = rows[0][0] if rows else None
        return None if value is None else int(value)

    def waiter(self, event: str) -> NodeRow | None:
        """The node that waits for ``event`` (one per event name, ADR-0148)."""
        rows = self.sql.execute(f"{_NODE_SELECT} WHERE wait_event = ? LIMIT 1", [event])
        return NodeRow(*rows[0]) if rows else None  # type: ignore[arg-type]

    def kept_event(self, event: str) -> KeptEvent | None:
        rows = self.sql.execute(
            "SELECT event, payload, received_at, node_id FROM run_event WHERE event = ?", [event]
        )
        return KeptEvent(*rows[0]) if rows else None  # type: ignore[arg-type]

    def keep_event(self, event: str, payload: str | None, now_ms: int, node_id: str | None) -> None:
        self.sql.execute(
            "INSERT INTO run_event (event, payload, received_at, node_id) VALUES (?, ?, ?, ?)",
            [event, payload, now_ms, node_id],
        )

    def event_taken(self, event: str, node_id: str) -> None:
        self.sql.execute("UPDATE run_event SET node_id = ? WHERE event = ?", [node_id, event])
