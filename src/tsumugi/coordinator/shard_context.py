"""What every part of a job shard shares: its stores, settings, alarm and collaborators."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from tsumugi.clock import Clock
from tsumugi.core import ids
from tsumugi.core.json_types import JsonMapping
from tsumugi.core.policy import ShardSettings, settings_from_wire
from tsumugi.ports import AlarmPort, DispatchQueue, ReadModelWriter, RunNamespace, ShardNamespace, SqlExecutor
from tsumugi.storage.attempt_log import AttemptLog
from tsumugi.storage.event_outbox import EventOutbox
from tsumugi.storage.job_store import JobStore
from tsumugi.storage.lane_queries import LaneQueries
from tsumugi.storage.setting_store import PINNED, SETTINGS, STATIC_SETTINGS, SettingStore
from tsumugi.storage.shard_schema import ensure_shard_schema
from tsumugi.storage.unique_keys import UniqueKeys

log = logging.getLogger("tsumugi")
T = TypeVar("T")


class MetricsWriter(Protocol):
    """Writes one metrics point per terminal snapshot after a projection.

    Should not raise; if it does, the tick logs ``tsumugi: writeMetrics failed`` and goes on.
    """

    # J-194, M-4

    async def write(self, snapshots: Sequence[Mapping[str, object]]) -> int: ...


class ShardContext:
    """One shard's state: created once per instance, the schema ensured on creation (spec 8.1)."""

    def __init__(
        self,
        name: str,
        sql: SqlExecutor,
        *,
        clock: Clock,
        alarm: AlarmPort,
        queue: DispatchQueue,
        read_model: ReadModelWriter | None,
        shards: ShardNamespace | None,
        runs: RunNamespace | None,
        rand: Callable[[], float],
        metrics: MetricsWriter | None = None,
    ) -> None:
        self.name = name
        self.binding = name.rpartition("#")[0] or name
        self.shard_index = ids.shard_index_of_name(name)  # J-17
        self.sql = sql
        self.clock = clock
        self.alarm_port = alarm
        self.queue = queue
        self.read_model = read_model
        self.shards = shards
        self.runs = runs
        self.rand = rand
        self.metrics = metrics
        ensure_shard_schema(sql)
        self.jobs = JobStore(sql)
        self.lanes = LaneQueries(sql)
        self.attempts = AttemptLog(sql)
        self.unique = UniqueKeys(sql)
        self.store = SettingStore(sql)
        self.events = EventOutbox(sql)
        self._settings: ShardSettings | None = None

    def transaction(self, fn: Callable[[], T]) -> T:
        """``sql.transaction(fn)``; a rollback also forgets the cached settings (ADR-0131).

        ``put_settings`` updates the cache as it writes, so a transaction that fails after it (a full
        disk at a later statement or at the commit) would leave the cache ahead of the disk, and the
        write skipped the next time the same settings come.
        """
        # J-51
        try:
            return self.sql.transaction(fn)
        except BaseException:
            self._settings = None
            raise

    # ------------------------------------------------------------------ settings (J-50, J-51, J-175)
    @property
    def settings(self) -> ShardSettings:
        """The settings in force, loaded lazily once per instance (step 1)."""
        # J-161
        if self._settings is None:
            self._settings = settings_from_wire(self.store.get_object(SETTINGS))
        return self._settings

    @property
    def pinned(self) -> bool:
        return bool(self.store.get(PINNED) == "1")

    def put_settings(self, settings: ShardSettings) -> None:
        """Store ``settings``, skipping the write when nothing changed."""
        # J-51
        if settings.to_wire() != self.settings.to_wire():
            self.store.put(SETTINGS, settings.to_wire())
        self._settings = settings

    def carry_settings(self, wire: JsonMapping) -> None:
        """Settings carried by an enqueue: applied unless pinned; notice targets always follow."""
        # J-50
        carried = settings_from_wire(wire)
        if self.store.get(STATIC_SETTINGS) != carried.to_wire():
            self.store.put(STATIC_SETTINGS, carried.to_wire())
        if self.pinned:  # ADR-0044: a pin holds policy and retention, not the notice targets
            carried = replace(self.settings, on_failure=carried.on_failure, on_settled=carried.on_settled)
        self.put_settings(carried)

    def pin(self, settings: ShardSettings) -> None:
        self.store.put(PINNED, "1")
        self.put_settings(settings)

    def unpin(self, settings_wire: JsonMapping | None) -> None:
        """Drop the pin and return to ``settings_wire`` or the static settings last carried."""
        # J-176
        self.store.delete(PINNED)
        self.put_settings(self.static_settings(settings_wire))

    def static_settings(self, settings_wire: JsonMapping | None) -> ShardSettings:
        """The binding's static settings: ``settings_wire`` (from the caller's config) or the last carried.

        ADR-0044: notice targets are not part of what a pin holds, so when the given settings name none
        the ones in force stay.
        """
        wire = settings_wire if settings_wire is not None else self.store.get_object(STATIC_SETTINGS)
        settings = settings_from_wire(wire)
        if wire is None or ("onFailure" not in wire and "onSettled" not in wire):
            current = self.settings
            settings = replace(settings, on_failure=current.on_failure, on_settled=current.on_settled)
        return settings

    # ------------------------------------------------------------------ alarm (J-160)
    async def arm(self, at_ms: int, *, stale_before: int | None = None) -> None:
        """Set the alarm to ``at_ms`` unless an earlier one is already armed: alarms only move earlier.

        ``stale_before``: at the end of a tick, an alarm at or before the tick's start is the one being
        handled (a platform may still report it), so it does not count as "already armed".
        """
        current = await self.alarm_port.get_alarm()
        stale = current is not None and stale_before is not None and current <= stale_before
        if current is None or stale or current > at_ms:
            await self.alarm_port.set_alarm(at_ms)
