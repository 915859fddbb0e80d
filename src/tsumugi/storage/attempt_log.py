"""The attempt log: one row per reported attempt, newest 20 in snapshots."""
# J-95, J-96

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, TypedDict

from tsumugi.ports import SqlExecutor, SqlValue

SNAPSHOT_ATTEMPTS: Final = 20  # J-96: snapshots carry at most the 20 newest attempt rows
MAX_BOUND_PARAMS: Final = 100  # Durable Object SQL binds at most 100 parameters per statement
_KEYS: Final = ("job_id", "attempt", "state", "started_at", "finished_at", "error")


class AttemptEntry(TypedDict):
    """One ``attempt`` row, as a snapshot's ``attempts_log`` lists it."""

    job_id: str
    attempt: int
    state: str  # COMPLETED or FAILED
    started_at: int | None
    finished_at: int
    error: str | None


# ``dict`` typed as what it builds from an ``attempt`` row read in ``_KEYS`` order (the table's types).
_entry: Final[Callable[[Iterable[tuple[str, SqlValue]]], AttemptEntry]] = dict  # type: ignore[assignment]


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
            "SELECT job_id, attempt, state, started_at, finished_at, error FROM attempt "
            "WHERE job_id = ? ORDER BY attempt DESC LIMIT ?",
            (job_id, limit),
        )
        return [_entry(zip(_KEYS, r, strict=True)) for r in rows]

    def newest_many(
        self, job_ids: list[str], limit: int = SNAPSHOT_ATTEMPTS
    ) -> dict[str, list[AttemptEntry]]:
        """``newest`` for many jobs at once: one statement per chunk of ids; a job without rows is absent."""
        found: dict[str, list[AttemptEntry]] = {}
        for start in range(0, len(job_ids), MAX_BOUND_PARAMS):
            part = job_ids[start : start + MAX_BOUND_PARAMS]
            rows = self.sql.execute(
                "SELECT job_id, attempt, state, started_at, finished_at, error FROM attempt "
                f"WHERE job_id IN ({', '.join('?' * len(part))}) ORDER BY job_id, attempt DESC",
                part,
            )
            for row in rows:
                entries = found.setdefault(str(row[0]), [])
                if len(entries) < limit:
                    entries.append(_entry(zip(_KEYS, row, strict=True)))
        return found

    def last_error(self, job_id: str) -> str | None:
        rows = self.sql.execute(
            "SELECT error FROM attempt WHERE job_id = ? ORDER BY attempt DESC LIMIT 1", (job_id,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None
