"""Durable alarms for every local coordinator: one persisted instant per coordinator, armed on the loop.

A Durable Object has exactly one alarm; so does each local coordinator. The instants live in one
SQLite file (``alarms.sqlite3``) so a restart finds every pending alarm with one query (ADR-0052).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from tsumugi.clock import Clock
from tsumugi.runtimes.local.sqlite_files import open_database

log = logging.getLogger("tsumugi.local")

AlarmHandler = Callable[[str], Awaitable[None]]

_SCHEMA = "CREATE TABLE IF NOT EXISTS alarm (coordinator TEXT PRIMARY KEY, at_ms INTEGER NOT NULL)"


class DurableAlarms:
    """The persisted alarm instants of every coordinator and the loop timers that fire them.

    ``handler(name)`` runs when a coordinator's alarm is due; it decides under the coordinator's lock
    whether the alarm is still due (see ``LocalShardNamespace.run_alarm``).
    """

    def __init__(self, path: Path, clock: Clock) -> None:
        self._db = open_database(path)
        self._db.execute(_SCHEMA)
        self._clock = clock
        rows = self._db.execute("SELECT coordinator, at_ms FROM alarm").fetchall()
        self._persisted: dict[str, int] = dict(rows)
        self._at: dict[str, int] = dict(rows)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._handler: AlarmHandler | None = None

    def get(self, name: str) -> int | None:
        return self._at.get(name)

    def pending(self) -> dict[str, int]:
        """Every coordinator with an alarm set, and its instant."""
        return dict(self._at)

    def set(self, name: str, at_ms: int) -> None:
        """Make ``at_ms`` the coordinator's alarm (replacing any other), persist it and arm it.

        ADR-0052: an instant already due is not written: every shard ticks at start anyway, so only
        future instants need the disk. That saves a write on every report and enqueue (J-165).
        """
        at_ms = int(at_ms)
        self._at[name] = at_ms
        if at_ms > self._clock.now() and self._persisted.get(name) != at_ms:
            self._db.execute("INSERT OR REPLACE INTO alarm (coordinator, at_ms) VALUES (?, ?)", (name, at_ms))
            self._persisted[name] = at_ms
        self._arm(name)

    def delete(self, name: str) -> None:
        self._at.pop(name, None)
        if self._persisted.pop(name, None) is not None:
            self._db.execute("DELETE FROM alarm WHERE coordinator = ?", (name,))
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

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

    def close(self) -> None:
        self._db.close()

    async def fire_due(self) -> None:
        """Run the handler now for every alarm that is due by the clock (tests drive a FixedClock)."""
        now_ms = self._clock.now()
        for name, at_ms in sorted(self._at.items(), key=lambda item: item[1]):
            if at_ms <= now_ms and self._handler is not None:
                await self._handler(name)

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
                if at_ms > self._clock.now():
                    break
                await self._handler(name)
                await asyncio.sleep(0)  # let requests queued on the coordinator lock go first
        except Exception:
            log.exception("tsumugi: alarm handler failed for %s", name)
        finally:
            self._running.pop(name, None)
        self._arm(name)
