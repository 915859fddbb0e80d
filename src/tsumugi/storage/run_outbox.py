"""The run's outbox: snapshots written with each change, projected later."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, NamedTuple

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import SqlExecutor

ROWS_PER_INSERT: Final = 25  # 4 bound parameters a row; Durable Object SQL binds at most 100
PROJECT_BATCH: Final = 200  # F-35 step 7: rows projected per tick; a longer backlog re-arms at once


class OutboxRow(NamedTuple):
    seq: int
    kind: str  # "run" | "node"
    snapshot: JsonObject


class RunOutbox:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def append(self, kind: str, target: str, snapshot: Mapping[str, object]) -> None:
        self.sql.execute(
            "INSERT INTO run_outbox (kind, target, snapshot) VALUES (?, ?, ?)",
            [kind, target, wire_format.dumps(snapshot)],
        )

    def append_many(self, kind: str, snapshots: Iterable[tuple[str, Mapping[str, object]]]) -> None:
        """``append`` for each ``(target, snapshot)`` in order, several rows per statement."""
        values = [(kind, target, wire_format.dumps(snapshot)) for target, snapshot in snapshots]
        for start in range(0, len(values), ROWS_PER_INSERT):
            chunk = values[start : start + ROWS_PER_INSERT]
            rows = ", ".join(["(?, ?, ?)"] * len(chunk))
            self.sql.execute(
                f"INSERT INTO run_outbox (kind, target, snapshot) VALUES {rows}",
                [value for row in chunk for value in row],
            )

    def read(self, limit: int = PROJECT_BATCH) -> list[OutboxRow]:
        rows = self.sql.execute("SELECT seq, kind, snapshot FROM run_outbox ORDER BY seq LIMIT ?", [limit])
        return [OutboxRow(int(r[0] or 0), str(r[1]), wire_format.loads(str(r[2]))) for r in rows]

    def delete_through(self, seq: int) -> None:
        self.sql.execute("DELETE FROM run_outbox WHERE seq <= ?", [seq])

    def is_empty(self) -> bool:
        return not self.sql.execute("SELECT 1 FROM run_outbox LIMIT 1")
