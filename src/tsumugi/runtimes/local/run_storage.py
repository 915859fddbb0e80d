"""A run's SQLite file, created only when a run is (F-20, F-28; ADR-0116).

``RUN.get(id)`` opens a coordinator for any id, and a cancel, retry or state of an unknown run must
answer "gone" without leaving an empty database behind. ``DeferredSqliteExecutor`` opens its file on
the first statement; ``exists`` tells the coordinator whether there is any storage to read before that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

T = TypeVar("T")


class DeferredSqliteExecutor:
    """``SqliteExecutor`` on ``path``, connected on first use instead of at construction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._executor: SqliteExecutor | None = None

    def exists(self) -> bool:
        """Whether the database is open or its file is on disk (a run was created before)."""
        return self._executor is not None or self.path.exists()

    def _open(self) -> SqliteExecutor:
        if self._executor is None:
            self._executor = SqliteExecutor(self.path)
        return self._executor

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return self._open().execute(sql, params)

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        self._open().execute_many(sql, rows)

    def transaction(self, fn: Callable[[], T]) -> T:
        return self._open().transaction(fn)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
