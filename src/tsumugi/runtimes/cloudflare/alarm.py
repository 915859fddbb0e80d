"""``ports.AlarmPort`` over a Durable Object's single alarm (``ctx.storage.setAlarm``)."""

from __future__ import annotations

from tsumugi.runtimes.cloudflare.js_conversion import py_optional_int, to_js_value
from tsumugi.runtimes.cloudflare.js_objects import DurableObjectStorage


class DurableObjectAlarm:
    """The coordinator's alarm; ``set_calls`` counts ``setAlarm`` calls, each billed as one row written."""

    def __init__(self, storage: DurableObjectStorage) -> None:
        self._storage = storage
        self.set_calls = 0

    async def get_alarm(self) -> int | None:
        return py_optional_int(await self._storage.getAlarm())

    async def set_alarm(self, at_ms: int) -> None:
        self.set_calls += 1
        # workerd refuses a time <= 0 (TypeError); any past time fires at once, so 1 ms means "now".
        await self._storage.setAlarm(to_js_value(max(1, at_ms)))

    async def delete_alarm(self) -> None:
        await self._storage.deleteAlarm()
