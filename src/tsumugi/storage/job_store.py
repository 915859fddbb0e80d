"""Job rows: insert, conditional transitions, heartbeats, lookups (J-30, J-92; over ``SqlExecutor``).

Every change bumps ``version`` (the snapshot ``seq``) and marks the job dirty in the outbox (J-190).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

from tsumugi.ports import SqlExecutor, SqlValue
from tsumugi.storage.job_rows import JOB_COLUMNS, JOB_SELECT, JobRow, chunks, job_from_row, seq_floor

_values = operator.itemgetter(*JOB_COLUMNS)  # a row's values in column order, in C
_INSERT = f"INSERT INTO job (ready, lane_at, {JOB_SELECT}) VALUES ({', '.join('?' * (len(JOB_COLUMNS) + 2))})"


class JobStore:
    """The ``job`` and ``outbox`` tables of one shard."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    # ------------------------------------------------------------------ reads
    def get(self, job_id: str) -> JobRow | None:
        rows = self.sql.execute(f"SELECT {JOB_SELECT} FROM job WHERE id = ?", (job_id,))
        return job_from_row(rows[0]) if rows else None

    def get_many(self, job_ids: Iterable[str]) -> list[JobRow]:
        found: list[JobRow] = []
        for part in chunks(list(job_ids)):
            marks = ", ".join("?" * len(part))
            rows = self.sql.execute(f"SELECT {JOB_SELECT} FROM job WHERE id IN ({marks})", part)
            found.extend(job_from_row(r) for r in rows)
        return found

    def state_of(self, job_id: str) -> str | None:
        rows = self.sql.execute("SELECT state FROM job WHERE id = ?", (job_id,))
        return str(rows[0][0]) if rows else None

    def exists(self, job_id: str) -> bool:
        return bool(self.sql.execute("SELECT 1 FROM job WHERE id = ?", (job_id,)))

    def count_active(self) -> int:
        rows = self.sql.execute("SELECT count(*) FROM job WHERE state IN ('SCHEDULED', 'QUEUED', 'RUNNING')")
        return int(rows[0][0])  # type: ignore[arg-type]

    # ------------------------------------------------------------------ writes
    def insert(self, job: JobRow, ready: int, lane_at: float) -> None:
        self.sql.execute(_INSERT, (ready, lane_at, *_values(job)))
        self.mark_dirty(job["id"])

    def insert_many(self, rows: list[tuple[JobRow, int, float]]) -> None:
        """Insert ``(job, ready, lane_at)`` rows and mark them dirty: one statement each (ADR-0105)."""
        if not rows:
            return
        self.sql.execute_many(_INSERT, [(ready, lane_at, *_values(job)) for job, ready, lane_at in rows])
        self.mark_dirty_many([job["id"] for job, _, _ in rows])

    def mark_dirty_many(self, job_ids: list[str]) -> None:
        self.sql.execute_many("INSERT OR IGNORE INTO outbox (job_id) VALUES (?)", [(i,) for i in job_ids])

    def mark_dirty(self, job_id: str) -> None:
        """Add to the outbox dirty set; free when already dirty (ADR-0042)."""
        self.sql.execute("INSERT OR IGNORE INTO outbox (job_id) VALUES (?)", (job_id,))

    def update(
        self,
        job_id: str,
        from_states: Iterable[str],
        now_ms: int,
        assignments: Mapping[str, Any],
        *,
        transition: bool = True,
    ) -> JobRow | None:
        """One conditional update (J-92): ``SET ... WHERE id = ? AND state IN (...)``.

        ``assignments`` maps a column to a value, or to a ``("sql", expr, params)`` triple for a SQL
        expression over the *old* row. A transition also stamps ``updated_at`` and clears the
        heartbeat, progress and cancel request (J-69, J-135). Returns the new row, or None if no row
        matched.
        """
        sets: list[str] = []
        params: list[SqlValue] = []
        merged: dict[str, Any] = {}
        if transition:
            merged.update(
                {"updated_at": now_ms, "heartbeat_at": None, "progress": None, "cancel_requested_at": None}
            )
        merged.update(assignments)
        for column, value in merged.items():
            if isinstance(value, tuple) and value and value[0] == "sql":
                sets.append(f"{column} = {value[1]}")
                params.extend(value[2])
            else:
                sets.append(f"{column} = ?")
                params.append(value)
        sets.append("version = max(version + 1, ?)")
        params.append(seq_floor(now_ms))
        states = list(from_states)
        marks = ", ".join("?" * len(states))
        rows = self.sql.execute(
            f"UPDATE job SET {', '.join(sets)} WHERE id = ? AND state IN ({marks}) RETURNING {JOB_SELECT}",
            (*params, job_id, *states),
        )
        if not rows:
            return None
        self.mark_dirty(job_id)
        return job_from_row(rows[0])

    def delete_many(self, job_ids: list[str]) -> None:
        self.sql.execute_many("DELETE FROM attempt WHERE job_id = ?", ((i,) for i in job_ids))
        self.sql.execute_many("DELETE FROM job WHERE id = ?", ((i,) for i in job_ids))

    # ------------------------------------------------------------------ outbox (dirty set)
    def dirty_ids(self, limit: int) -> list[str]:
        return [str(r[0]) for r in self.sql.execute("SELECT job_id FROM outbox LIMIT ?", (limit,))]

    def count_dirty(self) -> int:
        return int(self.sql.execute("SELECT count(*) FROM outbox")[0][0])  # type: ignore[arg-type]

    def clear_dirty(self, projected: Mapping[str, int | None]) -> None:
        """Remove projected ids unless the job changed again since (its version moved on)."""
        gone = [(job_id, job_id) for job_id, version in projected.items() if version is None]
        kept = [(job_id, job_id, version) for job_id, version in projected.items() if version is not None]
        if gone:
            self.sql.execute_many(
                "DELETE FROM outbox WHERE job_id = ? AND NOT EXISTS (SELECT 1 FROM job WHERE id = ?)", gone
            )
        if kept:
            self.sql.execute_many(
                "DELETE FROM outbox WHERE job_id = ? AND (SELECT version FROM job WHERE id = ?) = ?", kept
            )

    def is_dirty(self, job_id: str) -> bool:
        return bool(self.sql.execute("SELECT 1 FROM outbox WHERE job_id = ?", (job_id,)))
