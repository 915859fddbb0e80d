"""Checkpoints of the runtime's SQLite files on a thread of their own, away from the event loop (ADR-0162).

A WAL database grows a log of committed pages that a checkpoint copies back into the database file. By
default SQLite checkpoints inside the COMMIT that takes the log past 1,000 pages, so on a busy runtime one
commit in many also copies and syncs megabytes, on the event loop's thread. Here a daemon thread does it:
a store marks its file after it commits, and the thread checkpoints each marked file at most every
``PERIOD_S``, in PASSIVE mode, which never waits for nor blocks the store's own readers and writers. The
stores keep an automatic threshold well above what the thread lets the log reach, as a safety net.

Durability does not change: a commit is durable once it is in the log (WAL with synchronous=NORMAL,
ADR-0051), and a checkpoint moves pages that are already durable.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Final
from urllib.parse import quote

_log = logging.getLogger("tsumugi.local")

PERIOD_S: Final = 1.0  # commits in the same second share one checkpoint (ADR-0162: shorter costs the loop)
SAFETY_NET_PAGES: Final = (
    10_000  # ~40 MiB of log: the store checkpoints itself only if the thread falls behind
)
IDLE_CLOSE_S: Final = 5.0  # the thread's connection to a file not written for this long is closed
_MEMORY: Final = (":memory:", "")


def on_disk(path: str) -> bool:
    """Whether ``path`` names a database file (not an in-memory database)."""
    return path not in _MEMORY and not path.startswith("file::memory:")


class WalCheckpoints:
    """The checkpointing thread, shared by every store of the process (``CHECKPOINTS``).

    ``watch`` when a store opens a file, ``mark`` after it commits, ``forget`` before it closes. The thread
    holds one connection per watched file; ``forget`` closes it, so the store's own close is the last one
    and leaves no log behind, as before.
    """

    def __init__(self, period_s: float = PERIOD_S) -> None:
        self._period_s = period_s
        self._lock = threading.Lock()  # guards the sets below; never held while SQLite works
        self._busy = threading.Lock()  # held while the thread uses its connections
        self._wake = threading.Event()
        self._watched: dict[str, int] = {}  # file -> stores open on it
        self._marked: set[str] = set()
        self._connections: dict[str, tuple[sqlite3.Connection, float]] = {}  # file -> (connection, last use)
        self._thread: threading.Thread | None = None

    def watch(self, path: str) -> None:
        with self._lock:
            self._watched[path] = self._watched.get(path, 0) + 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tsumugi-checkpoints", daemon=True)
                self._thread.start()

    def mark(self, path: str) -> None:
        """Note that ``path`` has new commits (cheap: called after every transaction)."""
        if path in self._marked:  # already due: no lock, no wake-up
            return
        with self._lock:
            self._marked.add(path)
        self._wake.set()

    def forget(self, path: str) -> None:
        """Stop checkpointing ``path`` once its last store closes; waits for a checkpoint in progress."""
        with self._lock:
            left = self._watched.get(path, 0) - 1
            if left > 0:
                self._watched[path] = left
                return
            self._watched.pop(path, None)
            self._marked.discard(path)
        with self._busy:
            held = self._connections.pop(path, None)
            if held is not None:
                held[0].close()

    def _run(self) -> None:
        while True:
            if self._wake.wait(IDLE_CLOSE_S):
                time.sleep(self._period_s)  # pace: let the commits of one period share a checkpoint
            with self._lock:
                self._wake.clear()
                due = [path for path in self._marked if path in self._watched]
                self._marked = set()
            with self._busy:
                now = time.monotonic()
                for path in due:
                    self._checkpoint(path, now)
                self._close_idle(now)

    def _close_idle(self, now: float) -> None:
        """Close connections to files not written lately (or left open by a store that was never closed)."""
        for path, (connection, used_at) in list(self._connections.items()):
            if now - used_at >= IDLE_CLOSE_S:
                del self._connections[path]
                connection.close()

    def _checkpoint(self, path: str, now: float) -> None:
        with self._lock:
            if path not in self._watched:  # forgotten meanwhile
                return
        try:
            held = self._connections.get(path)
            connection = None if held is None else held[0]
            if connection is None:
                # mode=rw: a file deleted meanwhile is not created again
                uri = f"file:{quote(str(Path(path).resolve()))}?mode=rw"
                connection = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
                connection.execute("PRAGMA busy_timeout=0")
                connection.execute("PRAGMA synchronous=NORMAL")
            self._connections[path] = (connection, now)
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as error:  # busy, full, or gone: the store's own threshold still holds
            _log.debug("tsumugi: background checkpoint of %s skipped (%s)", path, error)


CHECKPOINTS: Final = WalCheckpoints()
