"""``ports.SqlDatabase`` over CPython sqlite3: the local read model, migrated like D1.

Statements run on the event loop's thread: each one is an indexed lookup that takes microseconds
(ADR-0063). The coordinators' own writes go through ``read_model_process`` (ADR-0170).
"""
# D-1..D-11

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tsumugi.ports import SqlValue
from tsumugi.runtimes.local import sqlite_null_binding  # noqa: F401  (None binds as NULL cheaply)
from tsumugi.runtimes.local.read_model_child import PAGE_CACHE_KIB, run_batch
from tsumugi.runtimes.local.sqlite_files import BUSY_TIMEOUT_MS
from tsumugi.runtimes.local.wal_checkpoints import CHECKPOINTS, SAFETY_NET_PAGES, on_disk

# wrangler's ledger table, so the same migration check reads both databases (D-11).
LEDGER_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, "
    "applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"
)


def default_migrations_dir() -> Path:
    """The D1 migrations: inside an installed wheel (``tsumugi/migrations``), else the checkout's."""
    # C-19
    package = Path(__file__).resolve().parents[2]
    shipped = package / "migrations"
    return shipped if shipped.is_dir() else package.parents[1] / "migrations"


class SqliteDatabase:
    """A D1-shaped database in one sqlite3 file (or ``:memory:``)."""

    # The local runtime writes metric points into its read model (ADR-0064), so /api/metrics reads them
    # here; a D1 database holds none, and without a metrics resolver the endpoint answers 501.
    holds_metrics = True

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        # One connection may be reached from a server thread and the runtime's loop; a transaction must
        # never interleave with another thread's statements.
        self._lock = threading.Lock()
        # The default 2 MiB page cache thrashes between the list query and COUNT(*) at 100k rows (ADR-0063).
        self._conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        # The coordinators' writes run in a process of their own (ADR-0170): a write made here (the
        # cron sweep) waits for one of theirs to commit instead of failing.
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._checkpointed = on_disk(self.path)
        if self._checkpointed:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")
            CHECKPOINTS.watch(self.path)  # ADR-0162

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        with self._lock:
            cursor = self._conn.execute(sql, tuple(params))
            try:
                return [dict(row) for row in cursor.fetchall()]
            finally:
                cursor.close()

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        with self._lock:
            cursor = self._conn.execute(sql, tuple(params))
            try:
                return cursor.rowcount
            finally:
                cursor.close()
                self._committed()

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        """Run all statements in one transaction, like D1's ``batch``."""
        with self._lock:
            run_batch(self._conn, statements)
        self._committed()

    def _committed(self) -> None:
        if self._checkpointed:
            CHECKPOINTS.mark(self.path)

    def executescript(self, script: str) -> None:
        with self._lock:
            self._conn.executescript(script)

    def ledger_names(self) -> set[str]:
        """Names recorded in the ``d1_migrations`` ledger."""
        with self._lock:
            return {str(r[0]) for r in self._conn.execute("SELECT name FROM d1_migrations").fetchall()}

    def close(self) -> None:
        with self._lock:
            if self._checkpointed:
                self._checkpointed = False
                CHECKPOINTS.forget(self.path)  # first, so this close is the file's last and removes its log
            self._conn.close()


def apply_migrations(db: SqliteDatabase, directory: str | Path | None = None) -> list[str]:
    """Apply every ``*.sql`` file not yet in the ledger, in name order; returns the names applied.

    Each file and its ledger row commit together, like ``wrangler d1 migrations apply``.
    """
    folder = Path(directory) if directory is not None else default_migrations_dir()
    db.executescript(LEDGER_DDL)
    done = db.ledger_names()
    applied: list[str] = []
    for path in sorted(folder.glob("*.sql")):
        if path.name in done:
            continue
        name = path.name.replace("'", "''")
        script = path.read_text(encoding="utf-8")
        db.executescript(f"BEGIN;\n{script}\nINSERT INTO d1_migrations (name) VALUES ('{name}');\nCOMMIT;")
        applied.append(path.name)
    return applied
