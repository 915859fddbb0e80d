"""The real engine behind ``LocalRuntime``: job shards, run coordinators and the scheduler on SqliteExecutor.

``JOB_SHARD`` holds the job shards; ``RUN`` one ``RunCoordinator`` per run id and ``SCHEDULER`` the one
``Scheduler`` (ADR-0101). Each coordinator has its own SQLite file and durable alarm, so runs and
schedules resume after a crash exactly like shards do (ADR-0052). The run coordinator's and the
scheduler's modules are imported when the first of them is made: a worker that runs only jobs starts
without them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tsumugi.coordinator.job_shard import JobShard
from tsumugi.core.config import BindingConfig, RunSettings
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import AlarmPort, SqlDatabase, SqlExecutor
from tsumugi.runtimes.local.read_model_process import RunFileProjection, ShardFileProjection, WriterProcess
from tsumugi.runtimes.local.run_storage import MAX_CONNECTED_RUNS, ConnectionBudget, DeferredSqliteExecutor
from tsumugi.runtimes.local.serial_coordinators import CoordinatorFactory
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.runtimes.local.wal_checkpoints import on_disk
from tsumugi.storage.read_model_writer import D1ReadModelWriter, LocalMetricsWriter

if TYPE_CHECKING:
    from tsumugi.coordinator.run import RunCoordinator
    from tsumugi.coordinator.scheduler import Scheduler
    from tsumugi.core.flow.model import Flow
    from tsumugi.core.schedules import ScheduleDef
    from tsumugi.runtimes.local.runtime import LocalRuntime

RUNS_KIND: Final = "runs"  # state_dir/runs/<flow>%3A<local id>.sqlite3
SCHEDULER_KIND: Final = "scheduler"  # state_dir/scheduler/scheduler.sqlite3
SCHEDULER_NAME: Final = "scheduler"  # S-12: the one instance's fixed name


def shard_counts(app: object) -> dict[str, int]:
    """Shards per binding, so flow nodes and scheduled jobs route like every other enqueue."""
    # J-19
    configs: Mapping[str, BindingConfig] = getattr(app, "binding_configs", None) or {}
    return {binding: config.shards for binding, config in configs.items()}


class EngineWiring:
    """``RuntimeWiring`` for production use; ``rand`` is injectable so benchmarks can be repeatable."""

    def __init__(
        self, rand: Callable[[], float] = random.random, *, max_connected_runs: int = MAX_CONNECTED_RUNS
    ) -> None:
        self._rand = rand
        self._writer_process: WriterProcess | None = None
        self._writer: D1ReadModelWriter | None = None
        self._metrics: LocalMetricsWriter | None = None
        # ADR-0132: a bound on open run databases, however many runs are busy at once
        self._run_connections = ConnectionBudget(max_connected_runs)

    def executor(self, path: Path) -> SqlExecutor:
        if path.parent.name == RUNS_KIND:
            # ADR-0116: no file for a run that was never started; ADR-0132: connected while used
            return DeferredSqliteExecutor(path, self._run_connections)
        return SqliteExecutor(path)

    def read_model(self, path: Path) -> SqliteDatabase:
        return SqliteDatabase(path)

    def close(self) -> None:
        """Wait for the run databases still closing on worker threads (ADR-0132)."""
        self._run_connections.drain()
        if self._writer_process is not None:
            self._writer_process.close()
            self._writer_process = None

    async def prepare_read_model(self, read_model: SqliteDatabase) -> None:
        """Apply the D1 migrations, as ``wrangler d1 migrations apply --local`` would."""
        # D-1
        apply_migrations(read_model)
        writes: SqlDatabase = read_model
        # ADR-0170: the coordinators write a read model file in a process of their own; a database a
        # subclass made (faults under it, in tests) is written here, through it.
        if type(read_model) is SqliteDatabase and on_disk(read_model.path):
            writes = self._writer_process = WriterProcess(read_model)
            await self._writer_process.start()
        self._writer = D1ReadModelWriter(writes)
        self._metrics = LocalMetricsWriter(writes)  # ADR-0064: no Analytics Engine locally

    def namespaces(self, runtime: LocalRuntime) -> Mapping[str, tuple[str, CoordinatorFactory]]:
        """``RUN`` and ``SCHEDULER``, always bound like a complete wrangler configuration.

        With schedules, the scheduler's alarm is set to now, so its first tick reconciles, fires what
        is due and arms the next occurrence (the local process's scheduler priming).
        """
        app = runtime.app
        # The app is duck-typed (a Tsumugi, or a test's stand-in): each part read is the Tsumugi one's type.
        flows: Mapping[str, Flow] = getattr(app, "flows", None) or {}
        settings: RunSettings = getattr(app, "runs", None) or RunSettings()
        schedules: list[ScheduleDef] = list(getattr(app, "schedules", None) or ())
        shards_of = shard_counts(app)
        # J-50, for node and scheduled jobs
        binding_settings: Callable[[str], JsonObject] | None = getattr(app, "static_settings", None)

        def run(name: str, sql: SqlExecutor, alarm: AlarmPort) -> RunCoordinator:
            from tsumugi.coordinator.run import RunCoordinator  # imported on first use: see the module's note

            projection = None
            # ADR-0179: the writer process projects a run from its file; one a test wrapped projects itself.
            if self._writer_process is not None and type(sql) is DeferredSqliteExecutor:
                projection = RunFileProjection(self._writer_process, str(sql.path), name)
            return RunCoordinator(
                name,
                sql,
                clock=runtime.clock,
                alarm=alarm,
                shards=runtime.shard_namespace,
                runs=runtime.env["RUN"],
                read_model=self._writer,
                flows=flows,
                settings=settings,
                shards_of=shards_of,
                storage_exists=sql.exists if isinstance(sql, DeferredSqliteExecutor) else None,
                binding_settings=binding_settings,
                projection=projection,
            )

        def scheduler(name: str, sql: SqlExecutor, alarm: AlarmPort) -> Scheduler:
            from tsumugi.coordinator.scheduler import Scheduler  # imported on first use, as above

            return Scheduler(
                sql,
                clock=runtime.clock,
                alarm=alarm,
                schedules=schedules,
                shards=runtime.shard_namespace,
                runs=runtime.env["RUN"],
                shards_of=shards_of,
                binding_settings=binding_settings,
            )

        if schedules:
            runtime.alarms.set(f"{SCHEDULER_KIND}/{SCHEDULER_NAME}", runtime.clock.now())
        return {"RUN": (RUNS_KIND, run), "SCHEDULER": (SCHEDULER_KIND, scheduler)}

    def job_shard(self, name: str, sql: SqlExecutor, alarm: AlarmPort, runtime: LocalRuntime) -> JobShard:
        projection = None
        # ADR-0171: the writer process projects a shard from its file; one a test wrapped projects itself.
        if self._writer_process is not None and type(sql) is SqliteExecutor and on_disk(sql.path):
            projection = ShardFileProjection(self._writer_process, sql.path)
        return JobShard(
            name,
            sql,
            clock=runtime.clock,
            alarm=alarm,
            queue=runtime.queue,
            read_model=self._writer,
            shards=runtime.shard_namespace,
            runs=runtime.env["RUN"],
            rand=self._rand,
            metrics=self._metrics,
            projection=projection,
        )
