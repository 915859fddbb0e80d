"""Clocks: the only place that reads wall time (ADR-0018's injected time)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Something that tells the time as integer epoch milliseconds."""

    def now(self) -> int: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> int:
        return time.time_ns() // 1_000_000


class FixedClock:
    """A clock that moves only when told to; tests and benchmarks drive it."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self._now = int(start)

    def now(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        """Move forward by ``ms`` and return the new time."""
        if ms < 0:
            raise ValueError("a FixedClock only moves forward")
        self._now += int(ms)
        return self._now

    def set(self, at: int) -> int:
        """Jump to ``at`` (epoch ms) and return it."""
        self._now = int(at)
        return self._now
