"""Reads of a shard's jobs off the plain path of one job: its state by id, which caller-given ids are held,
and the counts the shard report shows.

The tick's lane reads are in ``tick_tables``, the writes and the lookup of one row in ``job_table``.
"""
# J-38, J-185

from __future__ import annotations

from typing import Final

from tsumugi.core.states import JobState
from tsumugi.ports import SqlExecutor
from tsumugi.storage.sql_values import chunks, integer, literal_list

_ACTIVE_LIST: Final = literal_list((JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING))  # ACTIVE_STATES


class JobLookups:
    """Reads of the ``job``, ``outbox`` and ``fresh`` tables of one shard for its RPC surface."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def state_of(self, job_id: str) -> str | None:
        rows = self.sql.execute("SELECT state FROM job WHERE id = ?", (job_id,))
        return str(rows[0][0]) if rows else None

    def existing(self, job_ids: list[str]) -> set[str]:
        """Which of ``job_ids`` the shard holds: one statement per chunk of ids."""
        found: set[str] = set()
        for part in chunks(job_ids):
            marks = ", ".join("?" * len(part))
            found.update(
                str(r[0]) for r in self.sql.execute(f"SELECT id FROM job WHERE id IN ({marks})", part)
            )
        return found

    def count_active(self) -> int:
        rows = self.sql.execute(f"SELECT count(*) FROM job WHERE state IN {_ACTIVE_LIST}")
        return integer(rows[0][0])

    def count_dirty(self) -> int:
        """Jobs waiting for a projection, marked or fresh."""
        # J-185
        rows = self.sql.execute(
            "SELECT count(*) FROM (SELECT job_id FROM outbox UNION SELECT job_id FROM fresh)"
        )
        return integer(rows[0][0])
