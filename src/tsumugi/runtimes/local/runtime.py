"""``LocalRuntime``: the whole Cloudflare stack of one app in one process, on files under a state directory.

Layout of the state directory (ADR-0051)::

    shards/<binding>%23<n>.sqlite3 one file per job shard (a Durable Object's SQLite; ``#`` is quoted)
    runs/<run id>.sqlite3          one file per run (and scheduler/ for the scheduler), opened on demand
    alarms.sqlite3                 every coordinator's durable alarm
    open_coordinators.sqlite3      runs and scheduler that were open and may hold a due alarm (ADR-0132)
    queue.sqlite3                  the dispatch queue (TSUMUGI_QUEUE)
    read_model.sqlite3             the read model (TSUMUGI_DB, D1)
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol

from tsumugi.api.env_bindings import EXPLAIN_CLOSED_BINDING, RUNTIME_GAUGES_BINDING
from tsumugi.clock import Clock, SystemClock
from tsumugi.errors import StateDirError
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.cron_trigger import CronTrigger
from tsumugi.runtimes.local.dispatch_queue import DurableQueue
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.local_env import LocalEnv, LocalExecutionContext, serve_remote_markers
from tsumugi.runtimes.local.open_journal import OpenJournal
from tsumugi.runtimes.local.queue_consumer import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_CONCURRENCY,
    LocalMessage,
    QueueConsumer,
)
from tsumugi.runtimes.local.runtime_gauges import LocalRuntimeGauges
from tsumugi.runtimes.local.serial_coordinators import Coordinator, CoordinatorFactory, SerialCoordinators
from tsumugi.runtimes.local.shard_namespace import LocalNamespace, LocalShardNamespace
from tsumugi.runtimes.local.sql_database import SqliteDatabase

log = logging.getLogger("tsumugi.local")

SHUTDOWN_GRACE_S = 5.0  # attempts still running after this are cut; their messages are redelivered
PROJECTION_GRACE_S = 2.0  # a projection still running this long into the stop is left to the next start
# ADR-0132: runs kept in memory between calls (settled ones are closed at once); only the 128 most
# recently used of them stay connected (run_storage.MAX_CONNECTED_RUNS).
MAX_IDLE_COORDINATORS = 256


class QueueHandlerApp(Protocol):
    """What the runtime needs of a Tsumugi object: its queue consumer (``Tsumugi.queue``)."""

    async def queue(
        self, batch: Sequence[LocalMessage], env: LocalEnv, ctx: LocalExecutionContext
    ) -> object: ...


class RuntimeWiring(Protocol):
    """Builds the engine pieces the runtime hosts; ``engine_wiring.EngineWiring`` is the real one."""

    def executor(self, path: Path) -> SqlExecutor: ...

    def read_model(self, path: Path) -> SqliteDatabase: ...

    def job_shard(
        self, name: str, sql: SqlExecutor, alarm: AlarmPort, runtime: LocalRuntime
    ) -> Coordinator: ...

    async def prepare_read_model(self, read_model: SqliteDatabase) -> None: ...

    def close(self) -> None:
        """Called once every coordinator is closed: release what the wiring itself holds."""
        ...

    def namespaces(self, runtime: LocalRuntime) -> Mapping[str, tuple[str, CoordinatorFactory]]:
        """Further coordinator namespaces by env binding (``"RUN": ("runs", factory)``)."""
        ...


class LocalRuntime:
    """Runs ``app`` with durable shards, alarms and queue under ``state_dir``; see the module docstring."""

    def __init__(
        self,
        app: QueueHandlerApp,
        state_dir: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        vars: Mapping[str, str] | None = None,
        exports: Mapping[str, object] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        wiring: RuntimeWiring | None = None,
        cron: bool = True,
        max_idle_coordinators: int = MAX_IDLE_COORDINATORS,
    ) -> None:
        """``max_idle_coordinators``: runs (and the scheduler) kept open between calls (ADR-0132)."""
        self.app = app
        self.state_dir = Path(state_dir)
        self.clock: Clock = clock or SystemClock()
        self.vars = dict(vars or {})
        self.ctx = LocalExecutionContext(exports or {})
        self._batch_size = batch_size
        self._max_concurrency = max_concurrency
        self._wiring = wiring
        self._cron = cron
        self._max_idle = max_idle_coordinators
        self._tasks: list[asyncio.Task[None]] = []
        self._coordinators: dict[str, SerialCoordinators] = {}
        self._started = False

    async def start(self) -> None:
        """Open every store, re-arm alarms and start delivering dispatch messages."""
        _check_writable(self.state_dir)
        if self._wiring is None:
            from tsumugi.runtimes.local.engine_wiring import EngineWiring

            self._wiring = EngineWiring()
        wiring = self._wiring
        try:
            alarms_path, queue_path = self.state_dir / "alarms.sqlite3", self.state_dir / "queue.sqlite3"
            # Through the wiring, like every coordinator's file, so tests can put faults under them.
            self.alarms = DurableAlarms(alarms_path, self.clock, sql=wiring.executor(alarms_path))
            self.journal = OpenJournal(self.state_dir / "open_coordinators.sqlite3")
            self.queue = DurableQueue(queue_path, self.clock, sql=wiring.executor(queue_path))
            self.read_model = wiring.read_model(self.state_dir / "read_model.sqlite3")
        except sqlite3.Error as error:
            raise StateDirError(f"cannot open the state in {self.state_dir}: {error}") from error
        await wiring.prepare_read_model(self.read_model)
        self.shards = SerialCoordinators(
            "shards",
            self.state_dir / "shards",
            self.alarms,
            self.clock,
            lambda name, sql, alarm: wiring.job_shard(name, sql, alarm, self),
            wiring.executor,
        )
        self._coordinators[self.shards.kind] = self.shards
        self.shard_namespace = LocalShardNamespace(self.shards)
        bindings: dict[str, object] = {
            **self.vars,
            "JOB_SHARD": self.shard_namespace,
            "TSUMUGI_QUEUE": self.queue,
            "TSUMUGI_DB": self.read_model,
            RUNTIME_GAUGES_BINDING: LocalRuntimeGauges(self.queue, self.clock.now()),  # ADR-0139: /metrics
            EXPLAIN_CLOSED_BINDING: True,  # ADR-0145: an app without auth says why it answers 404
        }
        for binding, (kind, factory) in wiring.namespaces(self).items():
            coordinators = SerialCoordinators(
                kind,
                self.state_dir / kind,
                self.alarms,
                self.clock,
                factory,
                wiring.executor,
                max_idle=self._max_idle,  # one per run: their number has no bound (ADR-0132)
                journal=self.journal,
            )
            self._coordinators[kind] = coordinators
            bindings[binding] = LocalNamespace(coordinators)
        self.env = LocalEnv(bindings)
        definition = getattr(self.app, "definition", None)
        for binding in serve_remote_markers(self.env, getattr(definition, "performers", {})):
            log.info("%s: a remote performer, performed in this process", binding)
        self.queue.void_leases()  # ADR-0053: no consumer of an earlier process is alive
        self._rearm_coordinators()
        self.alarms.start(self._fire_alarm)
        self.consumer = QueueConsumer(
            self.queue,
            self._deliver,
            self.clock,
            batch_size=self._batch_size,
            max_concurrency=self._max_concurrency,
        )
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.consumer.run(), name="tsumugi queue")]
        scheduled = getattr(self.app, "scheduled", None)
        if self._cron and callable(scheduled):
            trigger = CronTrigger(lambda controller: scheduled(controller, self.env, self.ctx), self.clock)
            self._tasks.append(loop.create_task(trigger.run(), name="tsumugi cron"))
        self._started = True
        _freeze_startup_objects()

    async def stop(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        """Stop delivering, let running attempts finish (up to ``grace_s``), and close every file."""
        if not self._started:
            return
        self._started = False
        await self.consumer.stop(grace_s)
        for task in self._tasks[1:]:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.ctx.drain()
        await self.alarms.stop()
        for coordinators in self._coordinators.values():
            await coordinators.quiesce(PROJECTION_GRACE_S)
        for coordinators in self._coordinators.values():
            coordinators.close()
        if self._wiring is not None:
            self._wiring.close()
        self.queue.close()
        self.journal.close()
        self.alarms.close()
        close = getattr(self.read_model, "close", None)
        if callable(close):
            result = close()
            if asyncio.iscoroutine(result):
                await result

    async def __aenter__(self) -> LocalRuntime:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _deliver(self, batch: list[LocalMessage]) -> None:
        await self.app.queue(batch, self.env, self.ctx)

    async def _fire_alarm(self, key: str) -> None:
        kind, _, name = key.partition("/")
        coordinators = self._coordinators.get(kind)
        if coordinators is not None:
            await coordinators.run_alarm(name)
        else:
            log.error("tsumugi: alarm for an unknown coordinator %r dropped", key)
            self.alarms.delete(key)

    def _rearm_coordinators(self) -> None:
        """Tick once at start every shard on disk, and every run the journal lists (ADR-0052, ADR-0132).

        A kill between a coordinator's commit and its ``set_alarm`` would leave work without an alarm;
        one tick finds such work, and a tick with nothing to do is cheap. The tick itself re-arms
        whatever later instant it still needs. Runs are not all opened: only one that was open can
        have lost an alarm, and every later alarm is persisted.
        """
        now_ms = self.clock.now()
        for coordinators in self._coordinators.values():
            for name in coordinators.start_up_names():
                self.alarms.set(coordinators.alarm_key(name), now_ms)


def _check_writable(state_dir: Path) -> None:
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        probe = state_dir / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise StateDirError(
            f"the state directory {state_dir} is not writable: {error.strerror or error}"
        ) from error


def _freeze_startup_objects() -> None:
    """Once per process, move every object alive when the first runtime starts out of the collector's way.

    The modules, the app and the runtime's own objects live as long as the process; left in the collector's
    oldest generation, each full collection walks all of them again while jobs run (ADR-0166). Frozen, they
    are never collected: garbage among them stays, which at start is next to none.
    """
    if gc.get_freeze_count() == 0:  # a later runtime, or a process that froze its own, freezes nothing more
        gc.freeze()
    _raise_first_threshold()


# The first thresholds CPython's collector starts with (3.11 and 3.12: 700; 3.13: 2,000), and the one the
# runtime sets instead (ADR-0180).
DEFAULT_FIRST_THRESHOLDS: Final = frozenset({700, 2_000})
FIRST_THRESHOLD: Final = 10_000


def _raise_first_threshold() -> None:
    """Collect the youngest objects after 10,000 more allocations than frees, not CPython's 700 or 2,000.

    A batch of jobs allocates its rows, messages and futures together and frees them together; at the
    default, the collector walks them every few hundred jobs and moves the survivors into the older
    generations, which then walk them again (ADR-0180). A process whose thresholds are not CPython's
    defaults set its own, and keeps them.
    """
    first, second, third = gc.get_threshold()
    if first in DEFAULT_FIRST_THRESHOLDS and (second, third) == (10, 10):
        gc.set_threshold(FIRST_THRESHOLD, second, third)
