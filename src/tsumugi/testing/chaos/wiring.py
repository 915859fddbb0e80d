"""The engine the simulator hosts: ``EngineWiring`` with every store under one ``StorageFaults``.

This is the wiring of ADR-0131's fault-injection tests (every shard, the alarms, the queue and the read
model through ``StorageFaults``), extended to the runs' stores, and with each coordinator wrapped in a
``ChaosCoordinator`` so a tick can be cut. A run's store stays a ``DeferredSqliteExecutor`` (ADR-0116
asks whether its file exists), so it gets a subclass that checks the faults first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from tsumugi.ports import AlarmPort, Row, SqlExecutor, SqlValue
from tsumugi.runtimes.local.engine_wiring import RUNS_KIND, EngineWiring
from tsumugi.runtimes.local.run_storage import ConnectionBudget, DeferredSqliteExecutor
from tsumugi.runtimes.local.serial_coordinators import FILE_SUFFIX, Coordinator, CoordinatorFactory
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.testing.chaos.injector import Injector
from tsumugi.testing.chaos.seams import ChaosCoordinator
from tsumugi.testing.faults import FaultySqlExecutor, StorageFaults

if TYPE_CHECKING:
    from tsumugi.runtimes.local.runtime import LocalRuntime

__all__ = ["ChaosWiring", "FaultyRunExecutor"]

T = TypeVar("T")
SHARDS_KIND = "shards"  # LocalRuntime keeps job shards under state_dir/shards/


class _Unchecked:
    """The plain ``DeferredSqliteExecutor`` methods of ``run``, for ``FaultySqlExecutor`` to wrap."""

    def __init__(self, run: FaultyRunExecutor) -> None:
        self._run = run

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return DeferredSqliteExecutor.execute(self._run, sql, params)

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        DeferredSqliteExecutor.execute_many(self._run, sql, rows)

    def transaction(self, fn: Callable[[], T]) -> T:
        return DeferredSqliteExecutor.transaction(self._run, fn)


class FaultyRunExecutor(DeferredSqliteExecutor):
    """A run's deferred store whose writes ``faults`` may fail, exactly as ``FaultySqlExecutor``'s do."""

    def __init__(self, path: Path, budget: ConnectionBudget | None, faults: StorageFaults) -> None:
        super().__init__(path, budget)
        self._checked = FaultySqlExecutor(_Unchecked(self), faults, label=path.name)

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return self._checked.execute(sql, params)

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        self._checked.execute_many(sql, rows)

    def transaction(self, fn: Callable[[], T]) -> T:
        return self._checked.transaction(fn)


class ChaosWiring(EngineWiring):
    """``EngineWiring`` over faulty stores and cut-able coordinators; ``shard_stores`` by shard name."""

    def __init__(self, faults: StorageFaults, injector: Injector, rand: Callable[[], float]) -> None:
        super().__init__(rand=rand)
        self.faults = faults
        self.injector = injector
        self.shard_stores: dict[str, SqlExecutor] = {}

    def executor(self, path: Path) -> SqlExecutor:
        if path.parent.name == RUNS_KIND:
            # The budget is EngineWiring's own (ADR-0132); a subclass shares it rather than copy it.
            return FaultyRunExecutor(path, self._run_connections, self.faults)
        store = self.faults.executor(SqliteExecutor(path), label=path.name)
        if path.parent.name == SHARDS_KIND:
            self.shard_stores[unquote(path.name.removesuffix(FILE_SUFFIX))] = store
        return store

    # The two overrides below answer what EngineWiring's callers use (a SqlDatabase, a Coordinator), not
    # the SqliteDatabase and JobShard its signatures name; Any until those name the protocols.
    def read_model(self, path: Path) -> Any:
        return self.faults.database(SqliteDatabase(path), label=path.name)

    def job_shard(self, name: str, sql: SqlExecutor, alarm: AlarmPort, runtime: LocalRuntime) -> Any:
        return ChaosCoordinator(super().job_shard(name, sql, alarm, runtime), name, self.injector)

    def namespaces(self, runtime: LocalRuntime) -> Mapping[str, tuple[str, CoordinatorFactory]]:
        return {
            binding: (kind, self._cut_able(factory))
            for binding, (kind, factory) in super().namespaces(runtime).items()
        }

    def _cut_able(self, factory: CoordinatorFactory) -> CoordinatorFactory:
        def make(name: str, sql: SqlExecutor, alarm: AlarmPort) -> Coordinator:
            return ChaosCoordinator(factory(name, sql, alarm), name, self.injector)

        return make
