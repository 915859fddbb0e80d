"""Waiting until the runtime cannot move without time passing: no task ready, no timer due.

The simulation moves the clock only then, so two runs of one schedule see the same events in the
same order. CPython's event loop keeps its ready callbacks and timers in ``_ready`` and ``_scheduled``;
when both hold nothing runnable, every task waits on the simulated clock, a lease or an alarm. A
loop without them (another implementation) is given a fixed number of rounds instead.
"""

from __future__ import annotations

import asyncio
from typing import Final

from tsumugi.testing.chaos.errors import ChaosError
from tsumugi.testing.chaos.injector import Injector

__all__ = ["settle"]

QUIET_ROUNDS: Final = 2  # consecutive idle looks: one more than needed, for a callback added late
BLIND_ROUNDS: Final = 200  # without the loop's internals: enough rounds for a batch to settle
MAX_ROUNDS: Final = 200_000  # a runtime that never goes quiet has a task that never waits


def _idle(loop: asyncio.AbstractEventLoop) -> bool | None:
    """Whether nothing but this task is runnable; None when the loop does not let us see."""
    ready = getattr(loop, "_ready", None)
    scheduled = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None:
        return None
    if ready:
        return False
    now = loop.time()
    return not any(not timer.cancelled() and timer.when() <= now for timer in scheduled)


async def settle(injector: Injector, *, rounds_only: bool = False) -> None:
    """Yield until the loop is idle (or a crash was asked for); ``rounds_only``: a few yields, no look."""
    if rounds_only:
        for _ in range(QUIET_ROUNDS * 4):
            await asyncio.sleep(0)
        return
    loop = asyncio.get_running_loop()
    quiet = 0
    for _ in range(MAX_ROUNDS):
        await asyncio.sleep(0)
        if injector.crash_reason is not None:
            return
        idle = _idle(loop)
        quiet = quiet + 1 if idle is not False else 0
        if quiet >= (QUIET_ROUNDS if idle else BLIND_ROUNDS):
            return
    raise ChaosError(f"the runtime never went quiet in {MAX_ROUNDS} rounds")
