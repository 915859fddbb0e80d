"""Unique-key reservations: independent of the job's lifecycle, by design."""
# J-33..J-37, J-34

from __future__ import annotations

from tsumugi.ports import SqlExecutor


class UniqueKeys:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def delete_expired(self, now_ms: int) -> None:
        self.sql.execute("DELETE FROM unique_key WHERE expires_at <= ?", (now_ms,))

    def reserve(self, key: str, job_id: str, expires_at: int) -> str | None:
        """Reserve ``key`` for ``job_id``; returns the holder's id when a live reservation exists."""
        landed = self.sql.execute(
            "INSERT OR IGNORE INTO unique_key (key, job_id, expires_at) VALUES (?, ?, ?) RETURNING job_id",
            (key, job_id, expires_at),
        )
        if landed:
            return None
        rows = self.sql.execute("SELECT job_id FROM unique_key WHERE key = ?", (key,))
        return str(rows[0][0])

    def live_holder(self, key: str, now_ms: int) -> str | None:
        """The job holding ``key`` now, without reserving it (ADR-0150: a duplicate spends no token)."""
        rows = self.sql.execute(
            "SELECT job_id FROM unique_key WHERE key = ? AND expires_at > ?", (key, now_ms)
        )
        return str(rows[0][0]) if rows else None
