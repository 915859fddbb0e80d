"""The simulation's clock: a ``FixedClock`` that also says when its next sleeper wakes (ADR-0142).

The simulator moves time from event to event: to the earliest of the next alarm, the next sleeper
(an attempt's timeout; a heartbeat's wait) and the next queue lease to expire. A
``FixedClock`` keeps its sleepers to itself, so this one keeps its own.
"""
# J-74, J-65

from __future__ import annotations

import asyncio

from tsumugi.clock import FixedClock

__all__ = ["SimulatedClock"]


class SimulatedClock(FixedClock):
    """A ``FixedClock`` whose sleepers can be listed (``next_wake_at``) and abandoned at the end."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        super().__init__(start)
        self._waiting: dict[asyncio.Future[None], int] = {}

    async def sleep_until(self, at: int) -> None:
        if self.now() >= at:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[waiter] = at
        try:
            await waiter
        finally:
            self._waiting.pop(waiter, None)

    def advance(self, ms: int) -> int:
        now = super().advance(ms)
        self._wake()
        return now

    def set(self, at: int) -> int:
        now = super().set(at)
        self._wake()
        return now

    def next_wake_at(self) -> int | None:
        """When the earliest sleeper wakes; None when nobody sleeps on this clock."""
        return min(self._waiting.values(), default=None)

    def sleepers(self) -> int:
        return len(self._waiting)

    def abandon(self) -> None:
        """Cancel every sleeper: the simulation is over, and nothing may wait on its time any more."""
        for waiter in list(self._waiting):
            if not waiter.done() and not waiter.get_loop().is_closed():
                waiter.cancel()
        self._waiting.clear()

    def _wake(self) -> None:
        now = self.now()
        for waiter, at in list(self._waiting.items()):
            if at <= now:
                del self._waiting[waiter]
                if not waiter.done() and not waiter.get_loop().is_closed():
                    waiter.set_result(None)
