"""Coordinators on their own SQLite files, one call at a time each: the local Durable Object namespace.

A Durable Object runs one event at a time (its input gate). Locally every coordinator gets an
``asyncio.Lock``; every RPC and every alarm tick runs under it, so the coordinator's
check-then-act logic never interleaves, even across ``await`` (ADR-0050). While a coordinator waits on
a call into another one, its own lock is free, as a Durable Object's input gate opens during an
outgoing call; so a shard notifying a run while the run enqueues into that shard cannot deadlock
(ADR-0102).

Like a Durable Object, a coordinator need not stay in memory: with ``max_idle`` set, one whose run has
settled (``dormant()``) is closed as soon as its turn ends, at most ``max_idle`` other idle ones are
kept (least recently used first out), and any of them is reopened from its file on the next call or
alarm (ADR-0132). An ``OpenJournal`` records which ones may hold a due alarm that only memory knows.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from asyncio import Lock
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from itertools import islice
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import quote, unquote

from tsumugi.clock import Clock
from tsumugi.errors import LocalRuntimeError
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.local_alarm import LocalAlarm
from tsumugi.runtimes.local.open_journal import OpenJournal

log = logging.getLogger("tsumugi.local")
T = TypeVar("T")

ALARM_RETRY_FIRST_MS = 2_000  # a Durable Object retries a failed alarm after about 2 s, then backs off
ALARM_RETRY_MAX_MS = 60_000  # ADR-0052: keep retrying locally, at most a minute apart, never give up
FILE_SUFFIX = ".sqlite3"
EVICTION_SCAN = 8  # idle coordinators looked at per eviction: a bounded cost, not a scan of all of them


class _Gate:
    """One hold of a coordinator's lock by one task; released while that task calls another coordinator."""

    __slots__ = ("__weakref__", "holding", "slot", "task")

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
# Held weakly: a timer armed during a turn copies the context, and must not keep the coordinator and its
# storage alive until it fires (a settled run's sweep alarm is minutes away; ADR-0132).
_GateRef = weakref.ref[_Gate]
_gate: contextvars.ContextVar[_GateRef | None] = contextvars.ContextVar("tsumugi_gate", default=None)


def _current() -> _Gate | None:
    """The current task's gate; a task started inside a coordinator's turn inherits none of it."""
    held = _gate.get()
    gate = held() if held is not None else None
    return gate if gate is not None and gate.task is asyncio.current_task() else None


async def outside_turn(pending: Awaitable[T]) -> T:
    """Await a call out of the current coordinator's turn (another coordinator, the read model) with
    its lock free meanwhile.

    A Durable Object's input gate stays shut only for its own storage: while it awaits another object
    or service, other events are delivered to it (ADR-0102, ADR-0170).
    """
    caller = _current()
    if caller is None or not caller.holding:
        return await pending
    caller.open()
    try:
        return await pending
    finally:
        await caller.close()


class Coordinator(Protocol):
    """What a coordinator must answer besides its RPCs: one alarm tick.

    Its RPCs are its own (a job shard's, a run's); ``SerialCoordinators.call`` reaches them by name.
    """

    async def alarm(self) -> None: ...


class CoordinatorFactory(Protocol):
    def __call__(self, name: str, sql: SqlExecutor, alarm: AlarmPort) -> Coordinator: ...


class _Slot:
    __slots__ = ("coordinator", "failures", "key", "lock", "name", "sql", "ticking", "users")

    def __init__(self, name: str, key: str, coordinator: Coordinator, sql: SqlExecutor) -> None:
        self.name = name
        self.key = key
        self.coordinator = coordinator
        self.sql = sql
        self.lock = Lock()
        self.failures = 0
        self.ticking = False  # a tick is running, perhaps waiting on another coordinator (ADR-0102)
        self.users = 0  # calls and ticks in progress or waiting for the lock; only an unused slot closes


class SerialCoordinators:
    """Lazily opens one coordinator per name, each on ``<directory>/<name>.sqlite3``, and serialises calls.

    ``kind`` prefixes the coordinator's alarm key in ``DurableAlarms`` (``"shards/MAIL#0"``). Without
    ``max_idle`` every coordinator stays open until ``close`` (job shards: as many as configured).
    """

    def __init__(
        self,
        kind: str,
        directory: Path,
        alarms: DurableAlarms,
        clock: Clock,
        factory: CoordinatorFactory,
        executor: Callable[[Path], SqlExecutor],
        *,
        max_idle: int | None = None,
        journal: OpenJournal | None = None,
    ) -> None:
        self.kind = kind
        self._directory = directory
        self._alarms = alarms
        self._clock = clock
        self._factory = factory
        self._executor = executor
        if max_idle is not None and max_idle < 0:
            raise LocalRuntimeError(f"max_idle must be at least 0, not {max_idle}")
        self._slots: dict[str, _Slot] = {}
        self._max_idle = max_idle
        self._idle: OrderedDict[str, _Slot] = OrderedDict()  # open and unused, least recently used first
        self._journal = journal

    def alarm_key(self, name: str) -> str:
        return f"{self.kind}/{name}"

    def names_on_disk(self) -> list[str]:
        """Names of every coordinator that has a file in the directory."""
        if not self._directory.is_dir():
            return []
        return sorted(unquote(p.name[: -len(FILE_SUFFIX)]) for p in self._directory.glob(f"*{FILE_SUFFIX}"))

    def start_up_names(self) -> list[str]:
        """The coordinators to tick at start: every file on disk, or with a journal only those it lists.

        ADR-0052 ticks every file, to recover an alarm a kill lost between a commit and its
        ``set_alarm``; the journal names every coordinator that can have lost one (ADR-0132). A
        journal created by this start knows nothing yet, so the files are ticked once more.
        """
        if self._journal is None or self._journal.created:
            return self.names_on_disk()
        return self._journal.names(self.kind)

    def open_count(self) -> int:
        """How many coordinators are open (in use or idle)."""
        return len(self._slots)

    def coordinator(self, name: str) -> Coordinator:
        """The coordinator object itself (opened if needed); callers outside the lock must not mutate."""
        slot = self._slot(name)
        if slot.users == 0:
            self._keep_idle(slot)
        return slot.coordinator

    async def call(self, name: str, method: str, *args: object, **kwargs: object) -> object:
        """Call ``method`` on the named coordinator while holding its lock; its answer is the method's own."""

        async def call_method(coordinator: Coordinator) -> object:
            answer: object = await getattr(coordinator, method)(*args, **kwargs)
            return answer

        return await self.call_with(name, call_method)

    def holds(self, name: str) -> bool:
        """Whether the current task already holds the named coordinator's lock (a re-entrant call)."""
        caller = _current()
        return caller is not None and caller.holding and caller.slot.key == self.alarm_key(name)

    async def call_with(self, name: str, fn: Callable[[Coordinator], Awaitable[T]]) -> T:
        """Run ``fn(coordinator)`` while holding its lock, like ``call`` (ADR-0106: report batching).

        The coordinator is whatever this namespace's factory built, which only the caller knows: ``fn``
        checks that it has what it needs (a job shard's ``report_many``) before using it.

        A call from inside another coordinator's turn frees that coordinator's lock until it returns
        (ADR-0102); a coordinator calling itself re-enters.
        """
        slot = self._use(name)
        try:
            caller = _current()
            if caller is not None and caller.slot is slot:
                return await fn(slot.coordinator)
            return await outside_turn(self._in_turn(slot, fn))
        finally:
            self._done(slot)

    @staticmethod
    async def _in_turn(slot: _Slot, fn: Callable[[Coordinator], Awaitable[T]]) -> T:
        """``fn(coordinator)`` in a turn of its own: the coordinator's lock held, the task's gate set."""
        async with _Gate(slot) as gate:
            token = _gate.set(weakref.ref(gate))
            try:
                return await fn(slot.coordinator)
            finally:
                _gate.reset(token)

    async def run_alarm(self, name: str) -> None:
        """Fire the coordinator's alarm if it is still due; a failing tick is retried later (ADR-0052)."""
        at_ms = self._alarms.get(self.alarm_key(name))
        if at_ms is None or at_ms > self._clock.now():
            return  # not due: nothing to open a closed coordinator for
        slot = self._use(name)
        try:
            await self._tick(slot)
        finally:
            self._done(slot)

    async def _tick(self, slot: _Slot) -> None:
        async with _Gate(slot) as gate:
            at_ms = self._alarms.get(slot.key)
            now_ms = self._clock.now()
            if at_ms is None or at_ms > now_ms or slot.ticking:
                return  # not due, or the running tick's alarm loop picks the instant up when it ends
            self._alarms.fired(slot.key)  # a DO alarm is cleared when it fires; the tick may set a new one
            token = _gate.set(weakref.ref(gate))
            slot.ticking = True
            try:
                await slot.coordinator.alarm()
                slot.failures = 0
            except Exception:
                slot.failures += 1
                delay_ms = min(ALARM_RETRY_MAX_MS, ALARM_RETRY_FIRST_MS * 2 ** (slot.failures - 1))
                log.exception("tsumugi: alarm failed for %s; retrying in %d ms", slot.name, delay_ms)
                if self._alarms.get(slot.key) is None:
                    self._alarms.set(slot.key, now_ms + delay_ms)
            finally:
                slot.ticking = False
                _gate.reset(token)
                self._alarms.handled(slot.key)

    async def quiesce(self, timeout_s: float) -> None:
        """Let every open coordinator finish the work it runs beside its turns, for up to ``timeout_s``
        (a job shard's projection, ADR-0171); ``close`` follows."""
        waits = []
        for slot in list(self._slots.values()):
            quiesce = getattr(type(slot.coordinator), "quiesce", None)  # its class's own, as for close
            if callable(quiesce):
                waits.append(quiesce(slot.coordinator, timeout_s))
        await asyncio.gather(*waits)

    def close(self) -> None:
        """Close every open coordinator; the journal keeps those with a due alarm for the next start."""
        for slot in list(self._slots.values()):
            self._close_slot(slot)

    # ------------------------------------------------------------------ opening and closing (ADR-0132)
    def _slot(self, name: str) -> _Slot:
        slot = self._slots.get(name)
        if slot is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            key = self.alarm_key(name)
            if self._journal is not None:
                self._journal.opened(key)  # before any statement: from here on a kill may lose its alarm
            sql = self._executor(self._directory / f"{quote(name, safe='')}{FILE_SUFFIX}")
            coordinator = self._factory(name, sql, LocalAlarm(key, self._alarms))
            slot = self._slots[name] = _Slot(name, key, coordinator, sql)
        return slot

    def _use(self, name: str) -> _Slot:
        slot = self._slot(name)
        slot.users += 1
        self._idle.pop(name, None)
        return slot

    def _done(self, slot: _Slot) -> None:
        """The end of a call or tick: the last user closes a dormant coordinator or keeps it idle."""
        slot.users -= 1
        if slot.users > 0 or self._max_idle is None or self._slots.get(slot.name) is not slot:
            return
        try:
            if not self._alarm_due(slot) and _dormant(slot.coordinator):
                self._close_slot(slot)  # F-82: a settled run waits for its sweep alarm, on disk
            else:
                self._keep_idle(slot)
        except Exception:  # the call itself is done: its outcome must reach the caller
            log.exception("tsumugi: closing or keeping %s failed after its turn", slot.key)

    def _keep_idle(self, slot: _Slot) -> None:
        if self._max_idle is None:
            return
        self._idle[slot.name] = slot
        self._idle.move_to_end(slot.name)
        while len(self._idle) > self._max_idle:
            # Of the oldest few, one without a due alarm: one with a due alarm ticks soon and reopens.
            oldest = list(islice(self._idle.values(), EVICTION_SCAN))
            self._close_slot(next((idle for idle in oldest if not self._alarm_due(idle)), oldest[0]))

    def _alarm_due(self, slot: _Slot) -> bool:
        at_ms = self._alarms.get(slot.key)
        return at_ms is not None and at_ms <= self._clock.now()

    def _close_slot(self, slot: _Slot) -> None:
        if self._slots.get(slot.name) is slot:
            del self._slots[slot.name]
        self._idle.pop(slot.name, None)
        # The coordinator first: it stops using its storage. Its class's own method, never one a stand-in
        # makes up for any name.
        for closing in (slot.coordinator, slot.sql):
            close = getattr(type(closing), "close", None)
            if callable(close):
                close(closing)
        unsynced = getattr(self._alarms, "unsynced", None)
        only_in_memory = callable(unsynced) and slot.key in unsynced()  # its write failed (ADR-0131)
        if self._journal is not None and not self._alarm_due(slot) and not only_in_memory:
            # A future alarm is persisted (ADR-0052); a due one, or one whose write failed, lives in
            # memory only, so the name stays in the journal and a restart ticks the coordinator.
            self._journal.closed(slot.key)


def _dormant(coordinator: Coordinator) -> bool:
    """Whether the coordinator says it has nothing to do until a call or its persisted alarm."""
    dormant = getattr(coordinator, "dormant", None)
    return bool(dormant()) if callable(dormant) else False
