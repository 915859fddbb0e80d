"""Opening the runtime's own SQLite files (alarms, dispatch queue) with the durability the runtime needs."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from tsumugi.ports import SqlExecutor
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

BUSY_TIMEOUT_MS: Final = 5_000  # another process (a second `tsumugi dev`) may briefly hold the file

# ADR-0051: WAL + synchronous=NORMAL survives a process kill (SIGKILL) without an fsync per commit;
# only a power loss can drop the last commits, which a local development runtime accepts.
_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
)


def open_database(path: Path) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with WAL journaling; transactions are explicit (BEGIN/COMMIT)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in _PRAGMAS:
        connection.execute(pragma)
    return connection


def open_store(path: Path, sql: SqlExecutor | None = None) -> SqlExecutor:
    """``sql`` (the wiring's executor for ``path``) or a ``SqliteExecutor`` on it, waiting out brief locks.

    ``SqliteExecutor`` sets WAL and synchronous=NORMAL itself (ADR-0051).
    """
    if sql is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        sql = SqliteExecutor(path)
    sql.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return sql
