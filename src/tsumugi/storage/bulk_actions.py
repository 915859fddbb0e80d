"""Bulk actions over a whole filter, kept in the read model's database (ADR-0151).

One row per action: what it does, the filter and options as JSON, its progress counters, and a keyset
cursor ``(created_at, id)`` over the jobs it has reached. The table is created on first use, so neither
the read model's fixed DDL nor its migrations change, and it lives wherever the read model does: a
SQLite file on the local runtime (it survives a restart), D1 on Cloudflare.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from tsumugi.core.json_types import JsonObject
from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_jobs import JobFilter

BULK_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS bulk_action ("
    "id TEXT PRIMARY KEY NOT NULL, action TEXT NOT NULL, selection TEXT NOT NULL, options TEXT NOT NULL, "
    "state TEXT NOT NULL, matched INTEGER NOT NULL, done INTEGER NOT NULL, failed INTEGER NOT NULL, "
    "cursor_created_at INTEGER, cursor_id TEXT, snapshot_at INTEGER NOT NULL, lease_until INTEGER NOT NULL, "
    "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)"
)


@dataclass(frozen=True)
class BulkRecord:
    """One bulk action as stored: ``state`` is ``running`` or ``done``."""

    id: str
    action: str
    selection: JsonObject
    options: JsonObject
    state: str
    matched: int
    done: int
    failed: int
    cursor_created_at: int | None
    cursor_id: str | None
    snapshot_at: int
    created_at: int
    updated_at: int

    @property
    def processed(self) -> int:
        return self.done + self.failed


def _record(row: dict[str, SqlValue]) -> BulkRecord:
    def integer(name: str) -> int:
        value = row[name]
        return int(value) if isinstance(value, int | float) else 0

    cursor = row["cursor_created_at"]
    return BulkRecord(
        id=str(row["id"]),
        action=str(row["action"]),
        selection=json.loads(str(row["selection"])),
        options=json.loads(str(row["options"])),
        state=str(row["state"]),
        matched=integer("matched"),
        done=integer("done"),
        failed=integer("failed"),
        cursor_created_at=int(cursor) if isinstance(cursor, int | float) else None,
        cursor_id=None if row["cursor_id"] is None else str(row["cursor_id"]),
        snapshot_at=integer("snapshot_at"),
        created_at=integer("created_at"),
        updated_at=integer("updated_at"),
    )


class BulkActions:
    """The ``bulk_action`` rows and the keyset pages of the jobs they act on."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def ensure(self) -> None:
        await self.db.run(BULK_DDL)

    async def create(self, record: BulkRecord) -> None:
        await self.ensure()
        await self.db.run(
            "INSERT INTO bulk_action (id, action, selection, options, state, matched, done, failed, "
            "cursor_created_at, cursor_id, snapshot_at, lease_until, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, 0, NULL, NULL, ?, 0, ?, ?)",
            (
                record.id,
                record.action,
                json.dumps(record.selection),
                json.dumps(record.options),
                record.state,
                record.matched,
                record.snapshot_at,
                record.created_at,
                record.updated_at,
            ),
        )

    async def get(self, bulk_id: str) -> BulkRecord | None:
        await self.ensure()
        rows = await self.db.all("SELECT * FROM bulk_action WHERE id = ?", (bulk_id,))
        return _record(rows[0]) if rows else None

    async def running(self) -> list[str]:
        await self.ensure()
        rows = await self.db.all("SELECT id FROM bulk_action WHERE state = 'running' ORDER BY created_at")
        return [str(row["id"]) for row in rows]

    async def lease(self, bulk_id: str, now_ms: int, lease_ms: int) -> bool:
        """Take the right to run the next batch; False while another caller holds it."""
        changed = await self.db.run(
            "UPDATE bulk_action SET lease_until = ? WHERE id = ? AND state = 'running' AND lease_until <= ?",
            (now_ms + lease_ms, bulk_id, now_ms),
        )
        return changed > 0

    async def advance(
        self,
        record: BulkRecord,
        done: int,
        failed: int,
        cursor: tuple[int, str] | None,
        finished: bool,
        now_ms: int,
    ) -> None:
        """Add one batch's counts, move the cursor and release the lease, in one statement."""
        created_at, job_id = cursor if cursor is not None else (record.cursor_created_at, record.cursor_id)
        await self.db.run(
            "UPDATE bulk_action SET done = done + ?, failed = failed + ?, cursor_created_at = ?, "
            "cursor_id = ?, state = ?, lease_until = 0, updated_at = ? WHERE id = ?",
            (done, failed, created_at, job_id, "done" if finished else "running", now_ms, record.id),
        )

    @staticmethod
    def _where(flt: JobFilter, snapshot_at: int) -> tuple[str, list[SqlValue]]:
        where, params = flt.where()
        joiner = " AND " if where else " WHERE "
        # Jobs created after the action started are not part of it, so the count stays the count.
        return f"{where}{joiner}created_at <= ?", [*params, snapshot_at]

    async def count(self, flt: JobFilter, snapshot_at: int) -> int:
        where, params = self._where(flt, snapshot_at)
        rows = await self.db.all(f"SELECT COUNT(*) AS n FROM job{where}", params)
        return int(rows[0]["n"] or 0) if rows else 0

    async def page(
        self, flt: JobFilter, snapshot_at: int, after: tuple[int, str] | None, limit: int
    ) -> list[tuple[int, str]]:
        """The next ``limit`` matching jobs after the cursor, oldest first, as ``(created_at, id)``."""
        where, params = self._where(flt, snapshot_at)
        if after is not None:
            where += " AND (created_at > ? OR (created_at = ? AND id > ?))"
            params += [after[0], after[0], after[1]]
        rows = await self.db.all(
            f"SELECT created_at, id FROM job{where} ORDER BY created_at ASC, id ASC LIMIT ?", [*params, limit]
        )
        return [(int(str(row["created_at"])), str(row["id"])) for row in rows]
