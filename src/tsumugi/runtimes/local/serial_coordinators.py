"""Coordinators on their own SQLite files, one call at a time each: the local Durable Object namespace.

A Durable Object runs one event at a time (its input gate). Locally every coordinator gets an
``asyncio.Lock``; every RPC and every alarm tick runs under it, so the coordinator's
check-then-act logic never interleaves, even across ``await`` (ADR-0050).
"""

from __future__ import annotations

import contextvars
import logging
from asyncio import Lock
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, unquote

from tsumugi.clock import Clock
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.local_alarm import LocalAlarm

log = logging.getLogger("tsumugi.local")

ALARM_RETRY_FIRST_MS = 2_000  # a Durable Object retries a failed alarm after about 2 s, then backs off
ALARM_RETRY_MAX_MS = 60_000  # ADR-0052: keep retrying locally, at most a minute apart, never give up
FILE_SUFFIX = ".sqlite3"

# Names of the coordinators whose lock the current task holds: a coordinator that calls itself
# (directly or through another one) re-enters instead of deadlocking.
_held: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("tsumugi_held", default=frozenset())


class Coordinator(Protocol):
    """What a coordinator must answer besides its RPCs: one alarm tick."""

    async def alarm(self) -> None: ...


class CoordinatorFactory(Protocol):
    def __call__(self, name: str, sql: SqlExecutor, alarm: AlarmPort) -> Any: ...


class _Slot:
    __slots__ = ("coordinator", "failures", "key", "lock", "sql")

    def __init__(self, key: str, coordinator: Any, sql: SqlExecutor) -> None:
        self.key = key
        self.coordinator = coordinator
        self.sql = sql
        self.lock = Lock()
        self.failures = 0


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
        slot = self._slot(name)
        bound = getattr(slot.coordinator, method)
        if slot.key in _held.get():
            return await bound(*args, **kwargs)
        async with slot.lock:
            with _holding(slot.key):
                return await bound(*args, **kwargs)

    async def run_alarm(self, name: str) -> None:
        """Fire the coordinator's alarm if it is still due; a failing tick is retried later (ADR-0052)."""
        slot = self._slot(name)
        async with slot.lock:
            at_ms = self._alarms.get(slot.key)
            now_ms = self._clock.now()
            if at_ms is None or at_ms > now_ms:
                return
            self._alarms.delete(slot.key)  # a DO alarm is cleared when it fires; the tick may set a new one
            with _holding(slot.key):
                try:
                    await slot.coordinator.alarm()
                    slot.failures = 0
                except Exception:
                    slot.failures += 1
                    delay_ms = min(ALARM_RETRY_MAX_MS, ALARM_RETRY_FIRST_MS * 2 ** (slot.failures - 1))
                    log.exception("tsumugi: alarm failed for %s; retrying in %d ms", name, delay_ms)
                    if self._alarms.get(slot.key) is None:
                        self._alarms.set(slot.key, now_ms + delay_ms)

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


@contextmanager
def _holding(key: str) -> Iterator[None]:
    token = _held.set(_held.get() | {key})
    try:
        yield
    finally:
        _held.reset(token)
