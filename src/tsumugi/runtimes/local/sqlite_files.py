"""Opening the runtime's own SQLite files (alarms, dispatch queue) with the durability the runtime needs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# ADR-0051: WAL + synchronous=NORMAL survives a process kill (SIGKILL) without an fsync per commit;
# only a power loss can drop the last commits, which a local development runtime accepts.
_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=5000",  # 5 s: another process (a second `tsumugi dev`) briefly holds the file
)


def open_database(path: Path) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with WAL journaling; transactions are explicit (BEGIN/COMMIT)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in _PRAGMAS:
        connection.execute(pragma)
    return connection
