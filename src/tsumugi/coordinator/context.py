"""What each coordinator holds: its storage, clock, alarm and collaborators, in one context object.

Every coordinator (``JobShard``, ``RunCoordinator``, ``Scheduler``) is a class over a context from here
(ADR-0160). ``CoordinatorContext`` gives all three the same transaction, the same earliest-wins arming and
the same alarm tick: one at a time, and a failed one logged and tried again five seconds later. The parts
of a coordinator are modules of functions (or small classes) over its context.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import ClassVar, Final, TypeVar

from tsumugi.clock import Clock
from tsumugi.coordinator.first_attempts import FirstAttempts
from tsumugi.coordinator.shard_ports import MetricsWriter, ShardProjection
from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonMapping
from tsumugi.core.policy import ShardSettings, settings_from_wire
from tsumugi.ports import AlarmPort, DispatchQueue, ReadModelWriter, RunNamespace, ShardNamespace, SqlExecutor
from tsumugi.storage.attempt_log import AttemptLog
from tsumugi.storage.event_outbox import EventOutbox
from tsumugi.storage.job_lookups import JobLookups
from tsumugi.storage.job_table import JobStore
from tsumugi.storage.projection_outbox import ProjectionOutbox
from tsumugi.storage.shard_schema import ensure_shard_schema
from tsumugi.storage.tick_tables import (
    PINNED,
    SETTINGS,
    STATIC_SETTINGS,
    LaneQueries,
    SettingStore,
    UniqueKeys,
)

log = logging.getLogger("tsumugi")
T = TypeVar("T")
# J-164, F-38, S-16: a failed tick tries again five seconds later, forever, instead of letting the
# platform's limited alarm retries give up.
TICK_RETRY_MS: Final = 5000


class CoordinatorContext:
    """A coordinator's SQL, clock and alarm; its transaction, its arming and its alarm tick."""

    tick_log: ClassVar[logging.Logger] = log

    def __init__(self, name: str, sql: SqlExecutor, *, clock: Clock, alarm: AlarmPort) -> None:
        self.name = name
        self.sql = sql
        self.clock = clock
        self.alarm_port = alarm
        self.ticking = False  # a tick is running, perhaps awaiting another coordinator
        self._armed_in_tick: int | None = None  # the earliest arm made while the running tick awaited

    def transaction(self, body: Callable[[], T]) -> T:
        """``sql.transaction(body)``; a rollback also drops what ``forget`` drops."""
        try:
            return self.sql.transaction(body)
        except BaseException:
            self.forget()
            raise

    def forget(self) -> None:
        """Drop what is cached from storage: after a rollback or a failed tick, storage is the truth."""

    async def arm(self, at_ms: int, *, stale_before: int | None = None) -> None:
        """Set the alarm to ``at_ms`` unless an earlier one is already armed: alarms only move earlier.

        ``stale_before``: at the end of a tick, an alarm at or before the tick's start is the one being
        handled (a platform may still report it), so it does not count as "already armed". An arm made
        while the tick ran (by a call let in while it awaited) is remembered, and kept by that last arm
        even when it falls in the tick's first millisecond and so reads as stale.
        """
        # J-160, F-37
        if stale_before is None:
            if self.ticking:
                earlier = self._armed_in_tick
                self._armed_in_tick = at_ms if earlier is None else min(earlier, at_ms)
        elif self._armed_in_tick is not None:
            at_ms = min(at_ms, self._armed_in_tick)
            self._armed_in_tick = None
        current = await self.alarm_port.get_alarm()
        stale = current is not None and stale_before is not None and current <= stale_before
        if current is None or stale or current > at_ms:
            await self.alarm_port.set_alarm(at_ms)

    async def tick(self, body: Callable[[int], Awaitable[None]], *, failure: str) -> None:
        """Run one alarm tick, ``body(now_ms)``, which arms the next alarm itself.

        While a tick runs, another alarm only re-arms at now. A tick that raises is logged with
        ``failure``, the cache is forgotten and the tick is tried again ``TICK_RETRY_MS`` later.
        """
        # F-34, J-164, F-38, S-16
        now = self.clock.now()
        if self.ticking:
            await self.arm(now)
            return
        self.ticking = True
        self._armed_in_tick = None
        try:
            await body(now)
        except Exception:
            self.tick_log.exception(failure)
            self.forget()
            await self.retry_tick(now)
        finally:
            self.ticking = False

    async def retry_tick(self, now_ms: int) -> None:
        """After a failed tick: the alarm is force-set ``TICK_RETRY_MS`` from now."""
        # F-38, S-16
        await self.alarm_port.set_alarm(self.clock.now() + TICK_RETRY_MS)


class ShardContext(CoordinatorContext):
    """One job shard's state: created once per instance, the schema ensured on creation (spec 8.1)."""

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
        projection: ShardProjection | None = None,
    ) -> None:
        super().__init__(name, sql, clock=clock, alarm=alarm)
        self.binding = name.rpartition("#")[0] or name
        self.shard_index = wire_format.shard_index_of_name(name)  # J-17
        self.queue = queue
        self.read_model = read_model
        self.shards = shards
        self.runs = runs
        self.rand = rand
        self.metrics = metrics
        self.projection = projection
        self.projecting: asyncio.Task[None] | None = None  # applies the projections made beside
        self.project_again = False  # a tick came while one ran: it may have read before that tick's changes
        # ADR-0181: what the shard dispatched, for reports that come in batches (the local runtime's)
        self.first_attempts: FirstAttempts | None = None
        ensure_shard_schema(sql)
        self.jobs = JobStore(sql)
        self.lanes = LaneQueries(sql)
        self.outbox = ProjectionOutbox(sql)
        self.lookups = JobLookups(sql)
        self.attempts = AttemptLog(sql)
        self.unique = UniqueKeys(sql)
        self.store = SettingStore(sql)
        self.events = EventOutbox(sql)
        self._settings: ShardSettings | None = None

    async def finish_projection(self, timeout_s: float) -> None:
        """Let the projection running beside finish (and the ones it starts while more are due), for up
        to ``timeout_s``; then it is cancelled."""
        running = self.projecting
        if running is not None and not running.done():
            await asyncio.wait({running}, timeout=timeout_s)
        self.close()

    def close(self) -> None:
        """Stop applying the projection running beside: its storage is closing. Its marks stay, and
        are projected again when the shard is next opened."""
        if self.projecting is not None:
            self.projecting.cancel()
            self.projecting = None

    def forget(self) -> None:
        """A rollback forgets the cached settings (ADR-0131).

        ``put_settings`` updates the cache as it writes, so a transaction that fails after it (a full
        disk at a later statement or at the commit) would leave the cache ahead of the disk, and the
        write skipped the next time the same settings come.
        """
        # J-51
        self._settings = None

    async def retry_tick(self, now_ms: int) -> None:
        """After a failed tick: armed ``TICK_RETRY_MS`` after its start, unless an earlier alarm is set.

        An alarm armed while the tick ran (an enqueue's, a report's) is kept.
        """
        # J-164, J-160
        await self.arm(now_ms + TICK_RETRY_MS, stale_before=now_ms)

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
