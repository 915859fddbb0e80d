"""Bounded polling for tests that watch real tasks or child processes: always a deadline, never a bare sleep.

Tests that own the clock advance a FixedClock instead; these helpers are for work other tasks do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any


async def until(
    condition: Callable[[], Awaitable[Any] | Any], what: str, deadline_s: float, interval_s: float = 0.002
) -> Any:
    """Await ``condition`` (sync or async) until it returns something truthy, and return that value.

    Fails naming ``what`` after ``deadline_s``; between tries it yields to the runtime's tasks.
    """
    give_up_at = time.monotonic() + deadline_s
    while True:
        value = condition()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() > give_up_at:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(interval_s)  # other tasks do the work, with a deadline (noqa: sleep-ok)
