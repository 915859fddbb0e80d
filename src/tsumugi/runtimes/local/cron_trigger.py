"""The Worker's cron trigger, locally: call the app's ``scheduled`` handler every five minutes."""
# J-207

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from tsumugi.clock import Clock

log = logging.getLogger("tsumugi.local")

CRON = "*/5 * * * *"  # the trigger the generated wrangler config declares for the read-model sweep
CRON_INTERVAL_MS = 5 * 60 * 1000  # what CRON means: every five minutes, on the minute


class LocalScheduledController:
    """The ``controller`` a ``scheduled`` handler receives (``scheduledTime``, ``cron``)."""

    def __init__(self, scheduled_time: int, cron: str = CRON) -> None:
        self.scheduled_time = scheduled_time
        self.cron = cron

    @property
    def scheduledTime(self) -> int:  # the Workers spelling
        return self.scheduled_time

    def no_retry(self) -> None:
        """Workers' ``noRetry()``: a local cron is never retried, so there is nothing to turn off."""


ScheduledHandler = Callable[[LocalScheduledController], Awaitable[object]]


class CronTrigger:
    """Calls ``handler`` at every multiple of ``interval_ms`` of the clock, like a cron trigger."""

    def __init__(self, handler: ScheduledHandler, clock: Clock, interval_ms: int = CRON_INTERVAL_MS) -> None:
        self._handler = handler
        self._clock = clock
        self._interval_ms = interval_ms

    def next_fire_at(self, now_ms: int) -> int:
        """The first multiple of the interval after ``now_ms``."""
        return (now_ms // self._interval_ms + 1) * self._interval_ms

    async def fire(self, scheduled_time: int) -> None:
        """Run the handler once; a failure is logged, as a failed cron invocation is on Cloudflare."""
        try:
            await self._handler(LocalScheduledController(scheduled_time))
        except Exception:
            log.exception("tsumugi: scheduled handler failed")

    async def run(self) -> None:
        """Fire at every interval until cancelled."""
        while True:
            at_ms = self.next_fire_at(self._clock.now())
            await asyncio.sleep(max(0, at_ms - self._clock.now()) / 1000)
            await self.fire(at_ms)
