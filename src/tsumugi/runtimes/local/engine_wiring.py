"""The real engine behind ``LocalRuntime``: JobShard coordinators on SqliteExecutor, a migrated read model."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tsumugi.coordinator.job_shard import JobShard
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.serial_coordinators import CoordinatorFactory
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.read_model_writer import D1ReadModelWriter

if TYPE_CHECKING:
    from tsumugi.runtimes.local.runtime import LocalRuntime


class EngineWiring:
    """``RuntimeWiring`` for production use; ``rand`` is injectable so benchmarks can be repeatable."""

    def __init__(self, rand: Any = random.random) -> None:
        self._rand = rand
        self._writer: D1ReadModelWriter | None = None

    def executor(self, path: Path) -> SqlExecutor:
        return SqliteExecutor(path)

    def read_model(self, path: Path) -> SqliteDatabase:
        return SqliteDatabase(path)

    async def prepare_read_model(self, read_model: Any) -> None:
        """Apply the D1 migrations, as ``wrangler d1 migrations apply --local`` would (D-1)."""
        apply_migrations(read_model)
        self._writer = D1ReadModelWriter(read_model)

    def namespaces(self, runtime: LocalRuntime) -> Mapping[str, tuple[str, CoordinatorFactory]]:
        """No further coordinator kinds yet; flows add ``RUN``, schedules ``SCHEDULER``."""
        return {}

    def job_shard(self, name: str, sql: SqlExecutor, alarm: AlarmPort, runtime: LocalRuntime) -> JobShard:
        return JobShard(
            name,
            sql,
            clock=runtime.clock,
            alarm=alarm,
            queue=runtime.queue,
            read_model=self._writer,
            shards=runtime.shard_namespace,
            rand=self._rand,
        )
