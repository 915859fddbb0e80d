"""``ports.SqlDatabase`` over CPython sqlite3: the local read model, migrated like D1.

Reads run on the caller's thread: each one is an indexed lookup that takes microseconds (ADR-0063). Writes
run in order on a thread of their own, so projection overlaps the engine's work (ADR-0152).
"""
# D-1..D-11

from __future__ import annotations

import asyncio
import itertools
import operator
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final, TypeVar

from tsumugi.ports import SqlValue

T = TypeVar("T")

# wrangler's ledger table, so the same migration check reads both databases (D-11).
LEDGER_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, "
    "applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"
)


PAGE_CACHE_KIB: Final = 65_536  # 64 MiB: holds the job table's hot indexes at a million rows


def default_migrations_dir() -> Path:
    """The D1 migrations: inside an installed wheel (``tsumugi/migrations``), else the checkout's."""
    # C-19
    package = Path(__file__).resolve().parents[2]
    shipped = package / "migrations"
    return shipped if shipped.is_dir() else package.parents[1] / "migrations"


class SqliteDatabase:
    """A D1-shaped database in one sqlite3 file (or ``:memory:``).

    In a file, writes (``batch`` and ``run``) go to a writer thread of their own, in the order they were
    made, while reads use a second connection on the caller's thread: SQLite does its work without the
    GIL, so a projection batch runs on another core while the event loop goes on, and WAL lets a reader
    see the last commit without waiting for the writer (ADR-0152). ``:memory:`` keeps one connection
    and runs everything inline, as does ``inline_writes=True``: a seeded simulation must replay the same
    interleaving of tasks, which a thread's timing would not give it.
    """

    # The local runtime writes metric points into its read model (ADR-0064), so /api/metrics reads them
    # here; a D1 database holds none, and without a metrics resolver the endpoint answers 501.
    holds_metrics = True

    def __init__(self, path: str | Path, *, inline_writes: bool = False) -> None:
        self.path = str(path)
        self._conn = self._connect()
        # A connection may be reached from a server thread, the runtime's loop and the writer thread; a
        # transaction must never interleave with another thread's statements.
        self._lock = threading.Lock()
        self._writer: ThreadPoolExecutor | None = None
        self._reader = self._conn
        self._reader_lock = self._lock
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        if self.path != ":memory:" and not inline_writes:
            # One thread: the writes keep their order, as D1 applies one request after another.
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tsumugi-read-model")
            self._reader = self._connect()
            self._reader_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        # The default 2 MiB page cache thrashes between the list query and COUNT(*) at 100k rows (ADR-0063).
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        return conn

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        with self._reader_lock:
            cursor = self._reader.execute(sql, tuple(params))
            try:
                return [dict(row) for row in cursor.fetchall()]
            finally:
                cursor.close()

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        return await self._write(self._run, sql, tuple(params))

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        """Run all statements in one transaction, like D1's ``batch``."""
        await self._write(self._batch, statements)

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        if self._writer is None:
            return fn(*args)
        # Shielded: a write made completes even if its caller is cancelled meanwhile (close() waits for it);
        # unshielded, cancelling the caller would drop a write still queued behind another.
        return await asyncio.shield(asyncio.wrap_future(self._writer.submit(fn, *args)))

    def _run(self, sql: str, params: tuple[SqlValue, ...]) -> int:
        with self._lock:
            cursor = self._conn.execute(sql, params)
            try:
                return cursor.rowcount
            finally:
                cursor.close()

    def _batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                # Runs of the same statement go to executemany: one C loop instead of a call per row.
                for sql, group in itertools.groupby(statements, key=operator.itemgetter(0)):
                    self._conn.executemany(sql, [tuple(params) for _, params in group])
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # a full disk already rolled it back (see SqliteExecutor)
                    self._conn.execute("ROLLBACK")
                raise

    def executescript(self, script: str) -> None:
        with self._lock:
            self._conn.executescript(script)

    def ledger_names(self) -> set[str]:
        """Names recorded in the ``d1_migrations`` ledger."""
        with self._lock:
            return {str(r[0]) for r in self._conn.execute("SELECT name FROM d1_migrations").fetchall()}

    def close(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)  # the writes already made land first
        with self._lock:
            self._conn.close()
        if self._reader is not self._conn:
            with self._reader_lock:
                self._reader.close()


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
