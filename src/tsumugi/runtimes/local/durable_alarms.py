"""Durable alarms for every local coordinator: one persisted instant per coordinator, armed on the loop.

A Durable Object has exactly one alarm; so does each local coordinator. The instants live in one
SQLite file (``alarms.sqlite3``) so a restart finds every pending alarm with one query (ADR-0052).

ADR-0131: the loop timer is this process's alarm, and it never waits on the disk. A write that fails
(a full disk) leaves the timer armed; the row is written again later, until it goes through. A handler
that raises runs again after a backoff, as a Durable Object retries a failed alarm, and never stops.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from tsumugi.clock import Clock
from tsumugi.ports import SqlExecutor
from tsumugi.runtimes.local.sqlite_files import open_store

log = logging.getLogger("tsumugi.local")

AlarmHandler = Callable[[str], Awaitable[None]]

RETRY_FIRST_MS: Final = 2_000  # a Durable Object retries a failed alarm handler after about 2 s, doubling
RETRY_MAX_MS: Final = 60_000  # ADR-0052: locally the retries never stop, at most a minute apart

_SCHEMA: Final = "CREATE TABLE IF NOT EXISTS alarm (coordinator TEXT PRIMARY KEY, at_ms INTEGER NOT NULL)"


def backoff_ms(failures: int) -> int:
    """The wait after ``failures`` failures in a row: 2 s, 4 s, 8 s, ... capped at one minute."""
    return int(min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (max(1, failures) - 1)))


class DurableAlarms:
    """The persisted alarm instants of every coordinator and the loop timers that fire them.

    ``handler(name)`` runs when a coordinator's alarm is due; it decides under the coordinator's lock
    whether the alarm is still due (see ``SerialCoordinators.run_alarm``). ``sql`` is the store of
    ``path`` (the runtime passes its wiring's executor, so tests can put faults under it).
    """

    def __init__(self, path: Path, clock: Clock, *, sql: SqlExecutor | None = None) -> None:
        self._sql = sql = open_store(path, sql)
        sql.execute(_SCHEMA)
        self._clock = clock
        stored = sql.execute("SELECT coordinator, at_ms FROM alarm")
        rows = {str(name): at_ms for name, at_ms in stored if isinstance(at_ms, int)}  # at_ms is NOT NULL
        self._persisted: dict[str, int] = dict(rows)  # what the disk holds
        self._at: dict[str, int] = dict(rows)  # the alarm in force in this process
        self._unsynced: set[str] = set()  # names whose last write failed
        self._disk_failures = 0
        self._sync_timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._failures: dict[str, int] = {}  # handler failures in a row, per coordinator
        self._handler: AlarmHandler | None = None

    def get(self, name: str) -> int | None:
        return self._at.get(name)

    def pending(self) -> dict[str, int]:
        """Every coordinator with an alarm set, and its instant."""
        return dict(self._at)

    def unsynced(self) -> set[str]:
        """Coordinators whose alarm is armed in this process but not yet as it should be on disk."""
        return set(self._unsynced)

    def set(self, name: str, at_ms: int) -> None:
        """Make ``at_ms`` the coordinator's alarm (replacing any other), arm it, then persist it.

        ADR-0052: an instant already due is not written: every shard ticks at start anyway, so only
        future instants need the disk. That saves a write on every report and enqueue.
        """
        # J-165
        self._at[name] = int(at_ms)
        self._arm(name)  # ADR-0131: armed first; the disk may refuse the write
        self._persist(name)

    def delete(self, name: str) -> None:
        self.fired(name)
        self._persist(name)

    def fired(self, name: str) -> None:
        """Clear the alarm of a coordinator whose handler starts now; the disk keeps it until ``handled``.

        A Durable Object alarm is cleared when it fires, and retried if its handler does not finish. Here
        the row stays until the handler is done (ADR-0163): a crash mid-handler fires it again at the next
        start, and a handler that sets a new alarm replaces the row with one write, not a delete and a write.
        """
        self._at.pop(name, None)
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def handled(self, name: str) -> None:
        """The handler that ``fired`` cleared for is done: remove the row unless it set a new alarm."""
        if name not in self._at:
            self._persist(name)

    def sync(self) -> bool:
        """Write every row an earlier write failed to write; whether the disk is now current."""
        for name in sorted(self._unsynced):
            try:
                self._write(name)
            except sqlite3.OperationalError as error:
                self._disk_failed(error)
                return False
            self._unsynced.discard(name)
        if self._disk_failures:
            log.warning("tsumugi: alarms are written to disk again")
            self._disk_failures = 0
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        return True

    def start(self, handler: AlarmHandler) -> None:
        """Arm every persisted alarm; overdue ones fire at once (a DO alarm fires after a restart too)."""
        self._handler = handler
        for name in list(self._at):
            self._arm(name)

    async def stop(self) -> None:
        """Disarm the timers and wait for alarm handlers already running; the instants stay persisted."""
        self._handler = None
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        running = list(self._running.values())
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        self.sync()  # the last chance to leave the next process what this one armed
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None

    def close(self) -> None:
        self._closed = True
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        close = getattr(self._sql, "close", None)
        if callable(close):
            close()

    async def fire_due(self) -> None:
        """Run the handler now for every alarm that is due by the clock (tests drive a FixedClock)."""
        now_ms = self._clock.now()
        for name, at_ms in sorted(self._at.items(), key=lambda item: item[1]):
            if at_ms <= now_ms:
                await self._fire(name)

    # ------------------------------------------------------------------ the disk
    def _persist(self, name: str) -> None:
        try:
            self._write(name)
        except sqlite3.OperationalError as error:
            self._unsynced.add(name)
            self._disk_failed(error)
            return
        self._unsynced.discard(name)
        if self._unsynced:
            self.sync()  # the disk took this write: it may take the ones that failed before

    def _write(self, name: str) -> None:
        """Bring the row of ``name`` in line with its alarm (memory changes only once the disk did)."""
        at_ms = self._at.get(name)
        if at_ms is None:
            if name in self._persisted:
                self._sql.execute("DELETE FROM alarm WHERE coordinator = ?", (name,))
                del self._persisted[name]
        elif at_ms > self._clock.now() and self._persisted.get(name) != at_ms:
            self._sql.execute(
                "INSERT OR REPLACE INTO alarm (coordinator, at_ms) VALUES (?, ?)", (name, at_ms)
            )
            self._persisted[name] = at_ms

    def _disk_failed(self, error: sqlite3.OperationalError) -> None:
        """Log once per episode, and try the rows again after a backoff (ADR-0131)."""
        self._disk_failures += 1
        if self._disk_failures == 1:
            log.error("tsumugi: cannot write alarms (%s); they stay armed, written when it works", error)
        if self._sync_timer is not None or self._closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: the next write, or start, tries again
        self._sync_timer = loop.call_later(backoff_ms(self._disk_failures) / 1000, self._sync_later)

    def _sync_later(self) -> None:
        self._sync_timer = None
        self.sync()

    # ------------------------------------------------------------------ the loop timers
    def _arm(self, name: str) -> None:
        if self._handler is None or name in self._running:
            return  # not started yet, or the running handler re-checks the instant when it ends
        at_ms = self._at.get(name)
        if at_ms is None:
            return
        loop = asyncio.get_running_loop()
        previous = self._timers.pop(name, None)
        if previous is not None:
            previous.cancel()
        delay_s = max(0.0, (at_ms - self._clock.now()) / 1000)
        self._timers[name] = loop.call_later(delay_s, self._launch, name)

    def _launch(self, name: str) -> None:
        self._timers.pop(name, None)
        if self._handler is None or name in self._running:
            return
        task = asyncio.get_running_loop().create_task(self._run(name), name=f"tsumugi alarm {name}")
        self._running[name] = task

    async def _run(self, name: str) -> None:
        try:
            # Re-run while the instant is due: a tick that asks to run again "now" (J-163) sets its own
            # alarm to now from inside the handler, where arming is deferred to this loop.
            while self._handler is not None and (at_ms := self._at.get(name)) is not None:
                if at_ms > self._clock.now() or not await self._fire(name):
                    break
                await asyncio.sleep(0)  # let requests queued on the coordinator lock go first
        finally:
            self._running.pop(name, None)
        self._arm(name)

    async def _fire(self, name: str) -> bool:
        """Run the handler once; whether it returned. One that raises runs again later (ADR-0131)."""
        handler = self._handler
        if handler is None:
            return False
        try:
            await handler(name)
        except Exception:
            failures = self._failures[name] = self._failures.get(name, 0) + 1
            delay_ms = backoff_ms(failures)
            log.exception("tsumugi: alarm handler failed for %s; retrying in %d ms", name, delay_ms)
            now_ms = self._clock.now()
            at_ms = self._at.get(name)
            if at_ms is None or at_ms <= now_ms:  # it left no alarm ahead: retry, never give up
                self.set(name, now_ms + delay_ms)
            return False
        self._failures.pop(name, None)
        return True
