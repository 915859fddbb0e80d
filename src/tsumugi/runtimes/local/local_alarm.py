"""``ports.AlarmPort`` for one local coordinator, backed by ``DurableAlarms``."""

from __future__ import annotations

from tsumugi.runtimes.local.durable_alarms import DurableAlarms


class LocalAlarm:
    """The single durable alarm of the coordinator named ``name`` (a Durable Object's ``storage`` alarm)."""

    __slots__ = ("_alarms", "name")

    def __init__(self, name: str, alarms: DurableAlarms) -> None:
        self.name = name
        self._alarms = alarms

    async def get_alarm(self) -> int | None:
        return self._alarms.get(self.name)

    async def set_alarm(self, at_ms: int) -> None:
        self._alarms.set(self.name, at_ms)

    async def delete_alarm(self) -> None:
        self._alarms.delete(self.name)
