"""The scheduler's context: one row per schedule and the definitions in code, over
``CoordinatorContext``.

Apart from ``context`` so that a process that only runs jobs never imports the schedules' storage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from tsumugi.clock import Clock
from tsumugi.coordinator.context import CoordinatorContext
from tsumugi.coordinator.run_ports import RunPeers
from tsumugi.core.json_types import JsonMapping
from tsumugi.core.schedules import ScheduleDef, fingerprint
from tsumugi.ports import AlarmPort, ShardNamespace, SqlExecutor
from tsumugi.storage.schedule_store import ScheduleStore


class SchedulerContext(CoordinatorContext):
    """The schedules' state: one row per schedule, the definitions in code, and where firings go."""

    tick_log: ClassVar[logging.Logger] = logging.getLogger("tsumugi.scheduler")

    def __init__(
        self,
        sql: SqlExecutor,
        *,
        clock: Clock,
        alarm: AlarmPort,
        schedules: Sequence[ScheduleDef],
        shards: ShardNamespace,
        runs: RunPeers | None,
        shards_of: Mapping[str, int] | None,
        binding_settings: Callable[[str], JsonMapping] | None,
    ) -> None:
        super().__init__("scheduler", sql, clock=clock, alarm=alarm)
        self.store = ScheduleStore(sql)
        self.defs = {d.name: d for d in schedules}
        self.fingerprint = fingerprint(list(schedules))
        self.shards = shards
        self.runs = runs
        self.shards_of = shards_of or {}
        self.binding_settings = binding_settings
