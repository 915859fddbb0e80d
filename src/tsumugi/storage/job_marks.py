"""Which jobs the projection owes the read model: the ``outbox`` (marked jobs) and ``fresh`` (new ones).

Every change to a job marks it in the outbox, unless the job still waits in ``fresh`` for its first
projection, which reads the row as it is then; a finished job is marked at once (ADR-0042, ADR-0119).
A projected job is unmarked only if it still has the version that was projected.
"""
# J-190, J-192

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from tsumugi.core.states import TERMINAL_STATES
from tsumugi.ports import SqlExecutor
from tsumugi.storage.job_rows import JOB_COLUMNS, JobRow, chunks, job_from_row
from tsumugi.storage.sql_values import integer, literal_list, optional_integer

MARK: Final = "INSERT OR IGNORE INTO outbox (job_id) VALUES (?)"
# A change to a job still waiting for its first projection needs no mark: that projection reads the row.
_MARK_UNLESS_FRESH: Final = (
    "INSERT OR IGNORE INTO outbox (job_id) SELECT ? "
    "WHERE NOT EXISTS (SELECT 1 FROM fresh WHERE created_at = ? AND job_id = ?)"
)
_CLEAR_OUTBOX: Final = "DELETE FROM outbox WHERE job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?"
_CLEAR_FRESH: Final = (
    "DELETE FROM fresh WHERE created_at = ? AND job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?"
)
_TERMINAL_LIST: Final = literal_list(sorted(TERMINAL_STATES))
# The marked jobs due for projection with their rows, in one read; a gone job's columns are NULL. The last
# column says whether the job also still waits in ``fresh`` (ADR-0158).
_DUE_ROWS: Final = (
    f"SELECT o.job_id, {', '.join(f'j.{column}' for column in JOB_COLUMNS)}, "
    "EXISTS (SELECT 1 FROM fresh f WHERE f.created_at = j.created_at AND f.job_id = j.id) "
    "FROM outbox o LEFT JOIN job j ON j.id = o.job_id "
    f"WHERE j.id IS NULL OR j.updated_at < ? OR j.state IN {_TERMINAL_LIST} LIMIT ?"
)


class JobMarks:
    """The ``outbox`` and ``fresh`` tables of one shard (``JobStore`` carries these methods)."""

    sql: SqlExecutor

    def mark_changed(self, job: JobRow) -> None:
        """Mark a changed job for projection; free when already marked (ADR-0042).

        A finished job is marked at once; a job still waiting for its first projection is left to it.
        """
        # J-190
        if job["state"] in TERMINAL_STATES:
            self.sql.execute(MARK, (job["id"],))
        else:
            self.sql.execute(_MARK_UNLESS_FRESH, (job["id"], job["created_at"], job["id"]))

    def mark_changed_many(self, jobs: list[JobRow]) -> None:
        """``mark_changed`` for many jobs: one statement per chunk, finished and unfinished apart."""
        finished = [job["id"] for job in jobs if job["state"] in TERMINAL_STATES]
        unfinished = [job["id"] for job in jobs if job["state"] not in TERMINAL_STATES]
        for part in chunks(finished):
            values = ", ".join(["(?)"] * len(part))
            self.sql.execute(f"INSERT OR IGNORE INTO outbox (job_id) VALUES {values}", part)
        for part in chunks(unfinished):
            self.sql.execute(
                "INSERT OR IGNORE INTO outbox (job_id) SELECT j.id FROM job j "
                f"WHERE j.id IN ({', '.join('?' * len(part))}) AND NOT EXISTS "
                "(SELECT 1 FROM fresh f WHERE f.created_at = j.created_at AND f.job_id = j.id)",
                part,
            )

    def dirty_ids(self, limit: int) -> list[str]:
        return [str(r[0]) for r in self.sql.execute("SELECT job_id FROM outbox LIMIT ?", (limit,))]

    def due_rows(self, limit: int, changed_before_ms: int) -> tuple[dict[str, JobRow | None], dict[str, int]]:
        """Marked jobs whose projection is due (ADR-0135), with their rows, in one statement (ADR-0158).

        Due: finished, gone (its row None), or last changed before ``changed_before_ms``; a job still in
        flight that changed state since waits, so that if it finishes first one projection shows both
        changes. Also returns the ``created_at`` of those still waiting in ``fresh`` too.
        """
        rows: dict[str, JobRow | None] = {}
        in_fresh: dict[str, int] = {}
        for row in self.sql.execute(_DUE_ROWS, (changed_before_ms, limit)):
            job_id = str(row[0])
            if row[1] is None:
                rows[job_id] = None
                continue
            job = job_from_row(row[1:-1])
            rows[job_id] = job
            if row[-1]:
                in_fresh[job_id] = job["created_at"]
        return rows, in_fresh

    def earliest_waiting_mark(self) -> int | None:
        """When the earliest marked job still in flight last changed state (its projection waits)."""
        rows = self.sql.execute(
            # CROSS JOIN keeps the (small) outbox as the outer loop whatever the planner guesses.
            "SELECT min(j.updated_at) FROM outbox o CROSS JOIN job j ON j.id = o.job_id "
            f"WHERE j.state NOT IN {_TERMINAL_LIST}"
        )
        return optional_integer(rows[0][0]) if rows else None

    def fresh_ids(self, created_before_ms: int, limit: int) -> dict[str, int]:
        """New jobs created before ``created_before_ms`` and never projected, oldest first (ADR-0119).

        Maps each id to its ``created_at``, the other half of the ``fresh`` key.
        """
        rows = self.sql.execute(
            "SELECT job_id, created_at FROM fresh WHERE created_at < ? ORDER BY created_at LIMIT ?",
            (created_before_ms, limit),
        )
        return {str(job_id): integer(created_at) for job_id, created_at in rows}

    def earliest_fresh(self) -> int | None:
        """``created_at`` of the oldest job still waiting for its first projection."""
        rows = self.sql.execute("SELECT created_at FROM fresh ORDER BY created_at LIMIT 1")
        return integer(rows[0][0]) if rows else None

    def count_dirty(self) -> int:
        """Jobs waiting for a projection, marked or fresh."""
        # J-185
        rows = self.sql.execute(
            "SELECT count(*) FROM (SELECT job_id FROM outbox UNION SELECT job_id FROM fresh)"
        )
        return integer(rows[0][0])

    def clear_dirty(self, projected: Mapping[str, JobRow | None], fresh_created: Mapping[str, int]) -> None:
        """Unmark projected jobs unless they changed again since (their version moved on).

        ``projected`` maps each id to the row that was projected, None for a job that is gone;
        ``fresh_created`` gives the creation time of the ids that wait in ``fresh`` (a gone job has no
        row): only those are looked for there.
        """
        gone = [job_id for job_id, row in projected.items() if row is None]
        kept = [row for row in projected.values() if row is not None]
        if gone:
            self.sql.execute_many(
                "DELETE FROM outbox WHERE job_id = ? AND NOT EXISTS (SELECT 1 FROM job WHERE id = ?)",
                [(job_id, job_id) for job_id in gone],
            )
            self.sql.execute_many(
                "DELETE FROM fresh WHERE created_at = ? AND job_id = ? "
                "AND NOT EXISTS (SELECT 1 FROM job WHERE id = ?)",
                [(fresh_created[job_id], job_id, job_id) for job_id in gone if job_id in fresh_created],
            )
        if kept:
            self.sql.execute_many(_CLEAR_OUTBOX, [(r["id"], r["id"], r["version"]) for r in kept])
            fresh = [r for r in kept if r["id"] in fresh_created]
            if fresh:
                self.sql.execute_many(
                    _CLEAR_FRESH, [(r["created_at"], r["id"], r["id"], r["version"]) for r in fresh]
                )
