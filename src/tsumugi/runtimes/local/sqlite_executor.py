"""``SqlExecutor`` over CPython sqlite3: the local runtime's shard storage (STYLE.md habit 10)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from tsumugi.ports import Row, SqlValue

T = TypeVar("T")


class SqliteExecutor:
    """Synchronous SQL on one sqlite3 database file (or ``:memory:``).

    Statements outside ``transaction`` autocommit, as Durable Object SQL does. ``transaction`` runs
    ``fn`` between ``BEGIN IMMEDIATE`` and ``COMMIT`` (``ROLLBACK`` if it raises); a nested call joins
    the outer transaction.
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        # isolation_level=None: sqlite3 issues no implicit BEGIN; we control transactions ourselves.
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._depth = 0

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        cursor = self._conn.execute(sql, tuple(params))
        try:
            rows: list[Row] = cursor.fetchall()  # already tuples: no row_factory is set
            return rows
        finally:
            cursor.close()

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        self._conn.executemany(sql, rows).close()  # sqlite3 binds any sequence of parameters

    def transaction(self, fn: Callable[[], T]) -> T:
        if self._depth > 0:
            return fn()
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            result = fn()
        except BaseException:
            self._depth -= 1
            # A full disk rolls the transaction back by itself (SQLITE_FULL); a ROLLBACK then fails with
            # "no transaction is active" and hides the error that caused it.
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._depth -= 1
        self._conn.execute("COMMIT")
        return result

    def set_progress_handler(self, handler: Callable[[], int], every: int) -> None:
        """Call ``handler`` every ``every`` VM instructions (cost measurement, ADR-0042)."""
        self._conn.set_progress_handler(handler, every)

    @property
    def total_changes(self) -> int:
        """Rows inserted, updated or deleted since the connection opened (for cost measurement)."""
        return self._conn.total_changes

    def close(self) -> None:
        self._conn.close()
