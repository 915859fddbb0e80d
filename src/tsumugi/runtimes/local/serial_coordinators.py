"""Coordinators on their own SQLite files, one call at a time each: the local Durable Object namespace.

A Durable Object runs one event at a time (its input gate). Locally every coordinator gets an
``asyncio.Lock``; every RPC and every alarm tick runs under it, so the coordinator's
check-then-act logic never interleaves, even across ``await`` (ADR-0050). While a coordinator waits on
a call into another one, its own lock is free, as a Durable Object's input gate opens during an
outgoing call; so a shard notifying a run while the run enqueues into that shard cannot deadlock
(ADR-0102).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from asyncio import Lock
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, unquote

from tsumugi.clock import Clock
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.local_alarm import LocalAlarm

log = logging.getLogger("tsumugi.local")
T = TypeVar("T")

ALARM_RETRY_FIRST_MS = 2_000  # a Durable Object retries a failed alarm after about 2 s, then backs off
ALARM_RETRY_MAX_MS = 60_000  # ADR-0052: keep retrying locally, at most a minute apart, never give up
FILE_SUFFIX = ".sqlite3"


class _Gate:
    """One hold of a coordinator's lock by one task; released while that task calls another coordinator."""

    __slots__ = ("holding", "slot", "task")

    def __init__(self, slot: _Slot) -> None:
        self.slot = slot
        self.holding = False
        self.task = asyncio.current_task()

    async def __aenter__(self) -> _Gate:
        await self.slot.lock.acquire()
        self.holding = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.holding:
            self.holding = False
            self.slot.lock.release()

    def open(self) -> None:
        self.holding = False
        self.slot.lock.release()

    async def close(self) -> None:
        await self.slot.lock.acquire()
        self.holding = True


# The gate the current task holds: a coordinator that calls itself re-enters instead of deadlocking.
_gate: contextvars.ContextVar[_Gate | None] = contextvars.ContextVar("tsumugi_gate", default=None)


def _current() -> _Gate | None:
    """The current task's gate; a task started inside a coordinator's turn inherits none of it."""
    gate = _gate.get()
    return gate if gate is not None and gate.task is asyncio.current_task() else None


async def pause_turn(seconds: float) -> None:
    """Let other calls into the current task's coordinator run for ``seconds``, then take the turn back.

    Outside a coordinator's turn this only sleeps (ADR-0103: pacing costly run ticks).
    """
    gate = _current()
    if gate is None:
        await asyncio.sleep(seconds)
        return
    gate.open()
    try:
        await asyncio.sleep(seconds)
    finally:
        await gate.close()


class Coordinator(Protocol):
    """What a coordinator must answer besides its RPCs: one alarm tick."""

    async def alarm(self) -> None: ...


class CoordinatorFactory(Protocol):
    def __call__(self, name: str, sql: SqlExecutor, alarm: AlarmPort) -> Any: ...


class _Slot:
    __slots__ = ("coordinator", "failures", "key", "lock", "sql", "ticking")

    def __init__(self, key: str, coordinator: Any, sql: SqlExecutor) -> None:
        self.key = key
        self.coordinator = coordinator
        self.sql = sql
        self.lock = Lock()
        self.failures = 0
        self.ticking = False  # a tick is running, perhaps waiting on another coordinator (ADR-0102)


class SerialCoordinators:
    """Lazily opens one coordinator per name, each on ``<directory>/<name>.sqlite3``, and serialises calls.

    ``kind`` prefixes the coordinator's alarm key in ``DurableAlarms`` (``"shards/MAIL#0"``).
    """

    def __init__(
        self,
        kind: str,
        directory: Path,
        alarms: DurableAlarms,
        clock: Clock,
        factory: CoordinatorFactory,
        executor: Callable[[Path], SqlExecutor],
    ) -> None:
        self.kind = kind
        self._directory = directory
        self._alarms = alarms
        self._clock = clock
        self._factory = factory
        self._executor = executor
        self._slots: dict[str, _Slot] = {}

    def alarm_key(self, name: str) -> str:
        return f"{self.kind}/{name}"

    def names_on_disk(self) -> list[str]:
        """Names of every coordinator that has a file in the directory."""
        if not self._directory.is_dir():
            return []
        return sorted(unquote(p.name[: -len(FILE_SUFFIX)]) for p in self._directory.glob(f"*{FILE_SUFFIX}"))

    def coordinator(self, name: str) -> Any:
        """The coordinator object itself (opened if needed); callers outside the lock must not mutate."""
        return self._slot(name).coordinator

    async def call(self, name: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` on the named coordinator while holding its lock."""
        return await self.call_with(name, lambda coordinator: getattr(coordinator, method)(*args, **kwargs))

    def holds(self, name: str) -> bool:
        """Whether the current task already holds the named coordinator's lock (a re-entrant call)."""
        caller = _current()
        return caller is not None and caller.holding and caller.slot.key == self.alarm_key(name)

    async def call_with(self, name: str, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn(coordinator)`` while holding its lock, like ``call`` (ADR-0106: report batching).

        A call from inside another coordinator's turn frees that coordinator's lock until it returns
        (ADR-0102); a coordinator calling itself re-enters.
        """
        slot = self._slot(name)
        caller = _current()
        if caller is not None and caller.slot is slot:
            return await fn(slot.coordinator)
        if caller is not None:
            caller.open()
        try:
            async with _Gate(slot) as gate:
                token = _gate.set(gate)
                try:
                    return await fn(slot.coordinator)
                finally:
                    _gate.reset(token)
        finally:
            if caller is not None:
                await caller.close()

    async def run_alarm(self, name: str) -> None:
        """Fire the coordinator's alarm if it is still due; a failing tick is retried later (ADR-0052)."""
        slot = self._slot(name)
        async with _Gate(slot) as gate:
            at_ms = self._alarms.get(slot.key)
            now_ms = self._clock.now()
            if at_ms is None or at_ms > now_ms or slot.ticking:
                return  # not due, or the running tick's alarm loop picks the instant up when it ends
            self._alarms.delete(slot.key)  # a DO alarm is cleared when it fires; the tick may set a new one
            token = _gate.set(gate)
            slot.ticking = True
            try:
                await slot.coordinator.alarm()
                slot.failures = 0
            except Exception:
                slot.failures += 1
                delay_ms = min(ALARM_RETRY_MAX_MS, ALARM_RETRY_FIRST_MS * 2 ** (slot.failures - 1))
                log.exception("tsumugi: alarm failed for %s; retrying in %d ms", name, delay_ms)
                if self._alarms.get(slot.key) is None:
                    self._alarms.set(slot.key, now_ms + delay_ms)
            finally:
                slot.ticking = False
                _gate.reset(token)

    def close(self) -> None:
        """Close every opened coordinator's SQL executor (if it can be closed)."""
        for slot in self._slots.values():
            close = getattr(slot.sql, "close", None)
            if callable(close):
                close()
        self._slots.clear()

    def _slot(self, name: str) -> _Slot:
        slot = self._slots.get(name)
        if slot is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            sql = self._executor(self._directory / f"{quote(name, safe='')}{FILE_SUFFIX}")
            key = self.alarm_key(name)
            coordinator = self._factory(name, sql, LocalAlarm(key, self._alarms))
            slot = self._slots[name] = _Slot(key, coordinator, sql)
        return slot
