"""The Durable Object classes: the engine's coordinators hosted on DO storage, alarm and RPC.

Each class builds its coordinator once per instance over the adapters of this package, then forwards
every RPC to it: arguments arrive from JavaScript and go through ``to_py_value``, results leave through
``to_js_value`` (ADR-0082). The user's entry module exports them under the wrangler ``class_name``s.
"""
# J-4, J-22

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from functools import cached_property
from typing import Any, Final

from tsumugi.clock import SystemClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.core.json_types import JsonObject
from tsumugi.projection.analytics_engine import AnalyticsEngineWriter
from tsumugi.runtimes.cloudflare.alarm import DurableObjectAlarm
from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.cloudflare.do_sql import DurableObjectSqlExecutor
from tsumugi.runtimes.cloudflare.js_conversion import (
    py_object,
    py_objects,
    py_optional_int,
    py_optional_object,
    py_strings,
    to_js_value,
    to_py_value,
    unwrap_sdk,
)
from tsumugi.runtimes.cloudflare.js_objects import AnalyticsEngineDataset, DurableObjectState, JsValue
from tsumugi.runtimes.cloudflare.rpc_stubs import UNNAMED_MARKER, DurableObjectNamespaceClient
from tsumugi.runtimes.cloudflare.worker_env import worker_env_for
from tsumugi.storage.read_model_writer import D1ReadModelWriter

# ADR-0084: the SDK (untyped, importable only inside workerd or with its runtime modules stubbed) is
# resolved at run time, so type checking is the same whether or not workers-py is installed. Any: an
# untyped base class, whose own attributes (``ctx``, ``env``) this package does not use.
_DurableObject: Any = importlib.import_module("workers").DurableObject


# Where a Durable Object keeps its own name when ``ctx.id.name`` cannot tell it (see ``object_name``).
NAME_TABLE: Final = "tsumugi_object_name"


class UnnamedObjectError(Exception):
    """Raised by an RPC that reached a Durable Object which does not know its own name yet.

    The caller's stub answers by calling ``identify(name)`` once and retrying (``rpc_stubs``).
    """


class HostedCoordinator(_DurableObject):  # type: ignore[misc]
    """What every Tsumugi Durable Object shares: SQL, alarm, env adapters and its own name.

    The coordinator needs the Durable Object's name (a shard is ``<binding>#<n>``, a run its run id).
    ``ctx.id.name`` gives it whenever the stub came from ``idFromName``, as every Tsumugi stub does. A
    proxy that forwards by hex id (``wrangler dev``'s registry, between two dev processes) drops it; then
    the name kept in this object's SQL is used, and an object that has none yet refuses the call with
    ``UnnamedObjectError`` until the caller's stub ``identify``s it. A name learnt from ``ctx.id.name`` is
    kept too (once per object), because an alarm that wakes an evicted object may come without it.
    """

    # J-17

    def __init__(self, ctx: DurableObjectState, env: object) -> None:
        super().__init__(ctx, env)
        state = unwrap_sdk(ctx)
        self.sql = DurableObjectSqlExecutor(state.storage)
        self.alarm_port = DurableObjectAlarm(state.storage)
        self.worker_env = worker_env_for(env)
        self._name: str | None = str(to_py_value(getattr(state.id, "name", None)) or "") or None
        self._name_kept = False
        self._started_at = SystemClock().now()

    @property
    def object_name(self) -> str:
        if self._name is not None and not self._name_kept:
            self._keep_name(self._name)
        if self._name is None:
            self._name = self._stored_name()
        if self._name is None:
            raise UnnamedObjectError(f"{UNNAMED_MARKER}: this Durable Object does not know its name yet")
        return self._name

    def _stored_name(self) -> str | None:
        self.sql.execute(f"CREATE TABLE IF NOT EXISTS {NAME_TABLE} (name TEXT NOT NULL)")
        rows = self.sql.execute(f"SELECT name FROM {NAME_TABLE} LIMIT 1")
        self._name_kept = bool(rows)
        return str(rows[0][0]) if rows else None

    def _keep_name(self, name: str) -> None:
        if self._stored_name() is None:
            self.sql.execute(f"INSERT INTO {NAME_TABLE} (name) VALUES (?)", (name,))
        self._name_kept = True

    async def identify(self, name: str) -> None:
        """Learn this object's name from a caller that addressed it by name (see the class notes)."""
        name = str(to_py_value(name))
        if self._name is not None or self._stored_name() is not None:
            return
        self._keep_name(name)
        self._name = name

    async def meter(self) -> JsValue:
        """This instance's billed storage work since it started (COST.md), for benches and tests.

        ``rowsRead``/``rowsWritten`` sum every SQL cursor's counters, ``alarmSets`` counts ``setAlarm``
        calls (each billed as one row written). They restart with the instance (eviction, a restart of
        workerd); ``startedAt`` (epoch ms) tells instances apart. Reading the meter runs no SQL.
        """
        return to_js_value(
            {
                "rowsRead": self.sql.rows_read,
                "rowsWritten": self.sql.rows_written,
                "alarmSets": self.alarm_port.set_calls,
                "startedAt": self._started_at,
            }
        )


def _data_point_writer(dataset: AnalyticsEngineDataset) -> Callable[[JsonObject], None]:
    """``TSUMUGI_METRICS.writeDataPoint`` taking a Python point (indexes, blobs, doubles)."""
    # M-2

    def write(point: JsonObject) -> None:
        dataset.writeDataPoint(to_js_value(point))

    return write


class TsumugiJobShard(HostedCoordinator):
    """One job shard (``JOB_SHARD``): the RPC surface of ``ports.ShardRpc`` plus the alarm tick."""

    # J-161

    @cached_property
    def shard(self) -> JobShard:
        """The engine's shard, built on first use, once the object's name is known."""
        bindings = self.worker_env
        database = bindings.adapter("TSUMUGI_DB", D1Database)
        metrics = bindings.metrics_dataset()  # optional (J-6): one point per terminal snapshot (J-194)
        return JobShard(
            self.object_name,
            self.sql,
            clock=SystemClock(),
            alarm=self.alarm_port,
            queue=bindings.TSUMUGI_QUEUE,
            read_model=None if database is None else D1ReadModelWriter(database),
            shards=bindings.adapter("JOB_SHARD", DurableObjectNamespaceClient),
            runs=bindings.adapter("RUN", DurableObjectNamespaceClient),
            rand=random.random,
            metrics=None if metrics is None else AnalyticsEngineWriter(_data_point_writer(metrics)),
        )

    async def alarm(self, alarm_info: JsValue = None) -> None:
        await self.shard.alarm()

    async def enqueue_many(self, inputs: JsValue, settings: JsValue = None) -> JsValue:
        ids = await self.shard.enqueue_many(py_objects(inputs), py_optional_object(settings))
        return to_js_value(list(ids))

    async def enqueue_outcomes(self, inputs: JsValue, settings: JsValue = None) -> JsValue:
        """ADR-0149, ADR-0150: what each input did, for the REST answer."""
        outcomes = await self.shard.enqueue_outcomes(py_objects(inputs), py_optional_object(settings))
        return to_js_value(outcomes)

    async def report(self, job_id: str, outcome: JsValue) -> None:
        await self.shard.report(job_id, py_object(outcome))

    async def heartbeat(self, job_id: str, progress: JsValue = None, attempt: JsValue = None) -> JsValue:
        beat = await self.shard.heartbeat(job_id, to_py_value(progress), py_optional_int(attempt))
        return to_js_value(beat)

    async def claim(self, job_id: str) -> bool:
        return await self.shard.claim(job_id)

    async def expire(self, job_id: str) -> bool:
        return await self.shard.expire(job_id)

    async def retry(self, job_id: str) -> JsValue:
        return to_js_value(await self.shard.retry(job_id))

    async def cancel(self, job_id: str) -> JsValue:
        return to_js_value(await self.shard.cancel(job_id))

    async def reschedule(
        self, job_id: str, run_at: JsValue = None, delay_ms: JsValue = None, priority: JsValue = None
    ) -> JsValue:
        result = await self.shard.reschedule(
            job_id,
            run_at=py_optional_int(run_at),
            delay_ms=py_optional_int(delay_ms),
            priority=_optional_float(priority),
        )
        return to_js_value(result)

    async def mutate_many(self, action: str, job_ids: JsValue) -> JsValue:
        return to_js_value(await self.shard.mutate_many(action, py_strings(job_ids)))

    async def configure(self, settings: JsValue) -> JsValue:
        return to_js_value(await self.shard.configure(py_object(settings)))

    async def update_policy(self, patch: JsValue, settings: JsValue = None) -> JsValue:
        return to_js_value(await self.shard.update_policy(py_object(patch), py_optional_object(settings)))

    async def reset_policy(self, settings: JsValue = None) -> JsValue:
        return to_js_value(await self.shard.reset_policy(py_optional_object(settings)))

    async def diagnostics(self) -> JsValue:
        return to_js_value(await self.shard.diagnostics())

    async def state_of(self, job_id: str) -> JsValue:
        return to_js_value(await self.shard.state_of(job_id))


def _optional_float(value: JsValue) -> float | None:
    """An optional number argument from JS (a priority)."""
    data = to_py_value(value)
    if data is None:
        return None
    if isinstance(data, int | float | str):
        return float(data)
    raise TypeError(f"expected a number from JavaScript, got {type(data).__name__}")
