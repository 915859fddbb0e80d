"""The attempt log (J-95, J-96): one row per reported attempt, newest 20 in snapshots."""

from __future__ import annotations

from typing import Any, Final

from tsumugi.ports import SqlExecutor

SNAPSHOT_ATTEMPTS: Final = 20  # J-96: snapshots carry at most the 20 newest attempt rows


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
        """Upsert: a duplicate report for the same attempt overwrites its row (J-95)."""
        self.sql.execute(
            "INSERT OR REPLACE INTO attempt (job_id, attempt, state, started_at, finished_at, error) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (job_id, attempt, state, started_at, finished_at, error),
        )

    def newest(self, job_id: str, limit: int = SNAPSHOT_ATTEMPTS) -> list[dict[str, Any]]:
        rows = self.sql.execute(
            "SELECT job_id, attempt, state, started_at, finished_at, error FROM attempt "
            "WHERE job_id = ? ORDER BY attempt DESC LIMIT ?",
            (job_id, limit),
        )
        keys = ("job_id", "attempt", "state", "started_at", "finished_at", "error")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def last_error(self, job_id: str) -> str | None:
        rows = self.sql.execute(
            "SELECT error FROM attempt WHERE job_id = ? ORDER BY attempt DESC LIMIT 1", (job_id,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None
