"""Paced run ticks: a costly tick lets notifications in before the next one starts (ADR-0103).

A run's tick re-evaluates the whole run, so its cost grows with the node count, while each shard tick
delivers at most 200 events per run (F-45). Without a pause every delivery waits for a full tick, and a
10,000-node fan-out needs a tick per 200 completions. Pausing for half as long as the previous tick
took, with the run's lock free, lets shards deliver several batches per tick. Cheap ticks (small runs)
never pause.
"""

from __future__ import annotations

import time
from typing import Any, Final

from tsumugi.coordinator.run import RunCoordinator
from tsumugi.runtimes.local.serial_coordinators import pause_turn

PACE_FROM_S: Final = 0.05  # ticks cheaper than this run back to back
MAX_PAUSE_S: Final = 2.0  # never delay a run's next tick by more than this
PAUSE_SHARE: Final = 0.5  # the pause, as a share of the previous tick's duration


class PacedRun:
    """A ``RunCoordinator`` whose alarm tick first waits half as long as a costly previous tick took."""

    def __init__(self, run: RunCoordinator) -> None:
        self.run = run
        self._last_tick_s = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)

    async def alarm(self) -> None:
        if self._last_tick_s >= PACE_FROM_S:
            await pause_turn(min(self._last_tick_s * PAUSE_SHARE, MAX_PAUSE_S))
        started = time.perf_counter()
        try:
            await self.run.alarm()
        finally:
            self._last_tick_s = time.perf_counter() - started
