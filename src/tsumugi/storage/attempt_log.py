"""The ``attempt`` table of one shard: one row per finished attempt that failed, or that completed after
an earlier one had not.

A report writes its row in the same transaction as the job's transition, so the snapshot of that change
carries it. The projection reads the newest rows for its snapshots (``read_model_writer``); the sweep
deletes them with their job (``job_table``).
"""
# J-95, J-96

from __future__ import annotations

from tsumugi.ports import SqlExecutor
from tsumugi.storage.projection_outbox import (
    ATTEMPT_KEYS,
    ATTEMPT_SELECT,
    SNAPSHOT_ATTEMPTS,
    AttemptEntry,
    attempt_entry,
)


class AttemptLog:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def record(
        self,
        job_id: str,
        attempt: int,
        state: str,
        started_at: int | None,
        finished_at: int,
        error: str | None,
    ) -> None:
        """Upsert: a duplicate report for the same attempt overwrites its row."""
        # J-95
        self.sql.execute(
            "INSERT OR REPLACE INTO attempt (job_id, attempt, state, started_at, finished_at, error) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (job_id, attempt, state, started_at, finished_at, error),
        )

    def newest(self, job_id: str, limit: int = SNAPSHOT_ATTEMPTS) -> list[AttemptEntry]:
        rows = self.sql.execute(
            f"SELECT {ATTEMPT_SELECT} FROM attempt WHERE job_id = ? ORDER BY attempt DESC LIMIT ?",
            (job_id, limit),
        )
        return [attempt_entry(zip(ATTEMPT_KEYS, r, strict=True)) for r in rows]

    def last_error(self, job_id: str) -> str | None:
        rows = self.sql.execute(
            "SELECT error FROM attempt WHERE job_id = ? ORDER BY attempt DESC LIMIT 1", (job_id,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None
