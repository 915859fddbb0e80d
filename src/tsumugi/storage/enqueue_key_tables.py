"""The debounce and throttle tables: one row per live key, read and written by an enqueue that names one.

``debounce_key`` points at the waiting job of an open window; ``throttle_key`` keeps a key's theoretical
arrival time. Each is swept as it ages, by the enqueue that next uses such a key. The unique keys, which
the tick sweeps too, are in ``tick_tables``.
"""
# J-33..J-37, ADR-0150

from __future__ import annotations

from tsumugi.core.enqueue_keys import DebounceHolder
from tsumugi.ports import SqlExecutor


class DebounceKeys:
    """``debounce_key`` -> the waiting job it points at, until the window's end (``until``)."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def delete_expired(self, now_ms: int) -> None:
        """Windows that ended at or before now: their job is due, the next enqueue opens a new one."""
        self.sql.execute("DELETE FROM debounce_key WHERE until <= ?", (now_ms,))

    def holder(self, key: str) -> DebounceHolder | None:
        rows = self.sql.execute("SELECT job_id, max_at FROM debounce_key WHERE key = ?", (key,))
        if not rows:
            return None
        job_id, max_at = rows[0]
        return DebounceHolder(str(job_id), None if max_at is None else int(max_at))

    def put(self, key: str, job_id: str, until: int, max_at: int | None) -> None:
        self.sql.execute(
            "INSERT OR REPLACE INTO debounce_key (key, job_id, until, max_at) VALUES (?, ?, ?, ?)",
            (key, job_id, until, max_at),
        )

    def extend(self, key: str, until: int) -> None:
        self.sql.execute("UPDATE debounce_key SET until = ? WHERE key = ?", (until, key))


class ThrottleKeys:
    """``throttle_key`` -> its theoretical arrival time (``tat``); a passed ``tat`` is a full bucket."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def delete_expired(self, now_ms: int) -> None:
        self.sql.execute("DELETE FROM throttle_key WHERE tat <= ?", (now_ms,))

    def tat(self, key: str) -> float | None:
        rows = self.sql.execute("SELECT tat FROM throttle_key WHERE key = ?", (key,))
        if not rows:
            return None
        tat = rows[0][0]
        return float(tat) if isinstance(tat, int | float) else None

    def put(self, key: str, tat: float) -> None:
        self.sql.execute("INSERT OR REPLACE INTO throttle_key (key, tat) VALUES (?, ?)", (key, tat))
