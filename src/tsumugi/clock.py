"""Clocks: the only place that reads wall time, or waits for it (ADR-0018's injected time, ADR-0118)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Something that tells the time as integer epoch milliseconds and can wait for a later one."""

    def now(self) -> int: ...

    async def sleep_until(self, at: int) -> None:
        """Return once ``now()`` reads ``at`` (epoch ms) or later."""
        ...


class SystemClock:
    """The wall clock; waits run on the event loop's timers."""

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep_until(self, at: int) -> None:
        # The loop may wake a timer up to its clock resolution early, and the loop's monotonic clock
        # can drift from wall time: sleep again for whatever is left.
        while (remaining_ms := at - self.now()) > 0:
            await asyncio.sleep(remaining_ms / 1000)


class FixedClock:
    """A clock that moves only when told to; tests and benchmarks drive it.

    ``sleep_until`` waiters wake when ``advance`` or ``set`` moves the clock to their time (ADR-0118),
    so code that waits on the clock is tested without real waits.
    """

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self._now = int(start)
        self._sleepers: dict[asyncio.Future[None], int] = {}

    def now(self) -> int:
        return self._now

    async def sleep_until(self, at: int) -> None:
        if self._now >= at:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._sleepers[waiter] = at
        try:
            await waiter
        finally:
            self._sleepers.pop(waiter, None)  # also when the sleeper was cancelled

    def advance(self, ms: int) -> int:
        """Move forward by ``ms`` and return the new time."""
        if ms < 0:
            raise ValueError("a FixedClock only moves forward")
        self._now += int(ms)
        self._wake_due()
        return self._now

    def set(self, at: int) -> int:
        """Jump to ``at`` (epoch ms) and return it."""
        self._now = int(at)
        self._wake_due()
        return self._now

    def _wake_due(self) -> None:
        due = [waiter for waiter, at in self._sleepers.items() if at <= self._now]
        for waiter in due:
            del self._sleepers[waiter]
            # A waiter left behind by a finished event loop (a clock shared across tests) is dropped.
            if not waiter.done() and not waiter.get_loop().is_closed():
                waiter.set_result(None)
