"""A run's SQLite file: created only when a run is (ADR-0116), connected only while it is used (ADR-0132).

``RUN.get(id)`` opens a coordinator for any id, and a cancel, retry or state of an unknown run must
answer "gone" without leaving an empty database behind. ``DeferredSqliteExecutor`` opens its file on
the first statement; ``exists`` tells the coordinator whether there is any storage to read before that.

A connection holds three file descriptors (the database, its WAL and its shared-memory index) and its
caches. ``ConnectionBudget`` caps how many run databases are connected at once: one more disconnects
the least recently used, which reconnects on its next statement. That is safe at any ``await``: a
transaction is one synchronous call (``SqlExecutor.transaction``), so none is ever open across one.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from tsumugi.errors import LocalRuntimeError
from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

log = logging.getLogger("tsumugi.local")
T = TypeVar("T")

# ADR-0132: 3 fds each, so 128 connected runs take 384 of the 1,024 descriptors a default `ulimit -n`
# allows, leaving the rest to the shards, the runtime's own files and HTTP connections.
MAX_CONNECTED_RUNS = 128
# Closing checkpoints the WAL into the database and fsyncs it (synchronous=NORMAL, ADR-0051): 5-10 ms
# on a virtual disk. Worker threads do it off the loop, and concurrent fsyncs share a journal commit
# (8 threads close about ten times as many files per second as one). At most 32 wait, 96 more fds.
CLOSING_THREADS = 8
MAX_CLOSING = 32


class ConnectionBudget:
    """At most ``limit`` executors connected at once; beyond it the least recently used one disconnects.

    A disconnected connection is closed on a worker thread; ``drain`` waits until every one is.
    """

    def __init__(self, limit: int = MAX_CONNECTED_RUNS, closing_limit: int = MAX_CLOSING) -> None:
        if limit < 1 or closing_limit < 1:
            raise LocalRuntimeError("a connection budget needs room for at least one connection")
        self.limit = limit
        self.closing_limit = closing_limit
        self._connected: OrderedDict[DeferredSqliteExecutor, None] = OrderedDict()
        self._closing: deque[Future[None]] = deque()
        self._threads: ThreadPoolExecutor | None = None

    def __len__(self) -> int:
        """How many executors are connected (not counting connections still closing)."""
        return len(self._connected)

    def used(self, executor: DeferredSqliteExecutor) -> None:
        """``executor`` is about to run a statement: it becomes the most recently used."""
        if executor in self._connected:
            self._connected.move_to_end(executor)
            return
        self._connected[executor] = None
        while len(self._connected) > self.limit:
            # One inside a transaction keeps its connection; transactions never nest across runs.
            victim = next((e for e in self._connected if e is not executor and not e.in_transaction), None)
            if victim is None:
                return
            victim.disconnect()

    def released(self, executor: DeferredSqliteExecutor, connection: SqliteExecutor) -> None:
        """``executor`` gave up ``connection``: close it off the loop; wait only if too many are closing."""
        self._connected.pop(executor, None)
        while self._closing and self._closing[0].done():
            self._closing.popleft()
        if len(self._closing) >= self.closing_limit:
            self._closing.popleft().result()
        if self._threads is None:
            self._threads = ThreadPoolExecutor(CLOSING_THREADS, thread_name_prefix="tsumugi-close")
        closing = self._threads.submit(connection.close)
        closing.add_done_callback(_log_failure)
        self._closing.append(closing)

    def drain(self) -> None:
        """Wait until every released connection is closed (at shutdown)."""
        while self._closing:
            self._closing.popleft().exception()  # already logged by _log_failure
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None


def _log_failure(closing: Future[None]) -> None:
    error = closing.exception()
    if error is not None:
        log.error("tsumugi: closing a run database failed", exc_info=error)


class DeferredSqliteExecutor:
    """``SqliteExecutor`` on ``path``, connected on first use and again after each ``disconnect``."""

    def __init__(self, path: Path, budget: ConnectionBudget | None = None) -> None:
        self.path = path
        self._budget = budget
        self._executor: SqliteExecutor | None = None
        self._depth = 0  # transactions in progress; a connection inside one is never closed

    def exists(self) -> bool:
        """Whether the database is open or its file is on disk (a run was created before)."""
        return self._executor is not None or self.path.exists()

    @property
    def connected(self) -> bool:
        return self._executor is not None

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def _open(self) -> SqliteExecutor:
        if self._executor is None:
            # A run's database is small and its connections are budgeted: it checkpoints itself.
            self._executor = SqliteExecutor(self.path, background_checkpoints=False)
        if self._budget is not None:
            self._budget.used(self)
        return self._executor

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return self._open().execute(sql, params)

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        self._open().execute_many(sql, rows)

    def transaction(self, fn: Callable[[], T]) -> T:
        executor = self._open()
        self._depth += 1
        try:
            return executor.transaction(fn)
        finally:
            self._depth -= 1

    def disconnect(self) -> bool:
        """Give up the connection unless a transaction is in progress; the next statement reconnects."""
        if self.in_transaction:
            return False
        executor, self._executor = self._executor, None
        if executor is not None:
            if self._budget is not None:
                self._budget.released(self, executor)
            else:
                executor.close()
        return True

    def close(self) -> None:
        self.disconnect()
