"""``SqlExecutor`` over CPython sqlite3: the local runtime's shard storage (STYLE.md habit 10)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final, TypeVar

from tsumugi.errors import StorageFullError
from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.local import sqlite_null_binding  # noqa: F401  (None binds as NULL cheaply)
from tsumugi.runtimes.local.wal_checkpoints import CHECKPOINTS, SAFETY_NET_PAGES, on_disk

T = TypeVar("T")

_log = logging.getLogger("tsumugi")
SQLITE_FULL: Final = 13  # "database or disk is full": the disk, or PRAGMA max_page_count, has no room


class FullStorageEpisodes:
    """Logs a full store once per episode: from the first refused write to the next committed one.

    One per process (``FULL_STORAGE``): every store of the runtime sits on the same disk, and a request
    storm against a full disk must not write a traceback per request (ADR-0133).
    """

    def __init__(self) -> None:
        self.active = False

    def refused(self, path: str, error: sqlite3.Error) -> None:
        if not self.active:
            self.active = True
            _log.error(
                "storage is full (%s: %s): writes are refused with 503 until space is freed; "
                "not logged again until a write succeeds",
                path,
                error,
            )

    def committed(self) -> None:
        if self.active:
            self.active = False
            _log.warning("storage has room again: writes succeed")


FULL_STORAGE: Final = FullStorageEpisodes()


class SqliteStorageFullError(StorageFullError, sqlite3.OperationalError):
    """SQLITE_FULL from sqlite3: a ``StorageFullError`` that code catching sqlite3's errors still sees."""


def storage_full(path: str, error: sqlite3.Error) -> SqliteStorageFullError | None:
    """The typed error for sqlite3's SQLITE_FULL (logging the episode once), else None."""
    if getattr(error, "sqlite_errorcode", None) != SQLITE_FULL:
        return None
    FULL_STORAGE.refused(path, error)
    full = SqliteStorageFullError(f"storage is full: {path}: {error}")
    full.sqlite_errorcode = SQLITE_FULL
    full.sqlite_errorname = "SQLITE_FULL"
    return full


class SqliteExecutor:
    """Synchronous SQL on one sqlite3 database file (or ``:memory:``).

    Statements outside ``transaction`` autocommit, as Durable Object SQL does. ``transaction`` runs
    ``fn`` between ``BEGIN IMMEDIATE`` and ``COMMIT`` (``ROLLBACK`` if it raises); a nested call joins
    the outer transaction. A full disk raises ``StorageFullError`` (ADR-0133).
    """

    def __init__(self, path: str | Path = ":memory:", *, background_checkpoints: bool = True) -> None:
        self._path = str(path)
        # isolation_level=None: sqlite3 issues no implicit BEGIN; we control transactions ourselves.
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._depth = 0
        # ADR-0162: a thread of its own checkpoints the file; this connection only if that thread lags.
        self._checkpointed = background_checkpoints and on_disk(self._path)
        if self._checkpointed:
            self._conn.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")
            CHECKPOINTS.watch(self._path)

    @property
    def path(self) -> str:
        """The database file, or ``:memory:``."""
        return self._path

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        rows = self._run(sql, params)
        if self._depth == 0 and self._checkpointed:  # a statement outside a transaction commits itself
            CHECKPOINTS.mark(self._path)
        return rows

    def _run(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        # Transaction control goes through here, not ``execute``: it is this executor's own SQL, and Durable
        # Object SQL (where the engine's statements also run) refuses it.
        try:
            cursor = self._conn.execute(sql, tuple(params))
            try:
                rows: list[Row] = cursor.fetchall()  # already tuples: no row_factory is set
                return rows
            finally:
                cursor.close()
        except sqlite3.OperationalError as error:
            full = storage_full(self._path, error)
            if full is None:
                raise
            raise full from error

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        try:
            self._conn.executemany(sql, rows).close()  # sqlite3 binds any sequence of parameters
        except sqlite3.OperationalError as error:
            full = storage_full(self._path, error)
            if full is None:
                raise
            raise full from error
        if self._depth == 0 and self._checkpointed:
            CHECKPOINTS.mark(self._path)

    def transaction(self, fn: Callable[[], T]) -> T:
        if self._depth > 0:
            return fn()
        self._run("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            result = fn()
        except BaseException:
            self._depth -= 1
            self._rollback()
            raise
        self._depth -= 1
        try:
            self._run("COMMIT")
        except StorageFullError:
            self._rollback()  # a failed COMMIT leaves the transaction open
            raise
        if FULL_STORAGE.active:
            FULL_STORAGE.committed()
        if self._checkpointed:
            CHECKPOINTS.mark(self._path)
        return result

    def _rollback(self) -> None:
        if self._conn.in_transaction:  # SQLite may already have rolled back after SQLITE_FULL
            self._conn.execute("ROLLBACK")

    def set_progress_handler(self, handler: Callable[[], int], every: int) -> None:
        """Call ``handler`` every ``every`` VM instructions (cost measurement, ADR-0042)."""
        self._conn.set_progress_handler(handler, every)

    @property
    def total_changes(self) -> int:
        """Rows inserted, updated or deleted since the connection opened (for cost measurement)."""
        return self._conn.total_changes

    def close(self) -> None:
        if self._checkpointed:
            self._checkpointed = False
            CHECKPOINTS.forget(self._path)  # first, so this close is the file's last and removes its log
        self._conn.close()
