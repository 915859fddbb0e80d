"""The Durable Object classes: the engine's coordinators hosted on DO storage, alarm and RPC (J-4, J-22).

Each class builds its coordinator once per instance over the adapters of this package, then forwards
every RPC to it: arguments arrive from JavaScript and go through ``to_py_value``, results leave through
``to_js_value`` (ADR-0082). The user's entry module exports them under the wrangler ``class_name``s.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Sequence
from typing import Any

from tsumugi.clock import SystemClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.projection.analytics_engine import AnalyticsEngineWriter
from tsumugi.runtimes.cloudflare.alarm import DurableObjectAlarm
from tsumugi.runtimes.cloudflare.do_sql import DurableObjectSqlExecutor
from tsumugi.runtimes.cloudflare.js_conversion import to_js_value, to_py_value, unwrap_sdk
from tsumugi.runtimes.cloudflare.worker_env import worker_env_for
from tsumugi.storage.read_model_writer import D1ReadModelWriter

# ADR-0084: the SDK (untyped, importable only inside workerd or with its runtime modules stubbed) is
# resolved at run time, so type checking is the same whether or not workers-py is installed.
_DurableObject: Any = importlib.import_module("workers").DurableObject


class HostedCoordinator(_DurableObject):  # type: ignore[misc]
    """What every Tsumugi Durable Object shares: SQL, alarm, env adapters and its own name."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        state = unwrap_sdk(ctx)
        self.sql = DurableObjectSqlExecutor(state.storage)
        self.alarm_port = DurableObjectAlarm(state.storage)
        self.worker_env = worker_env_for(env)
        # J-17: the DO name (`<binding>#<n>` for a shard) is known when the id came from idFromName.
        self.object_name = str(to_py_value(getattr(state.id, "name", None)) or "")


def _data_point_writer(dataset: Any) -> Any:
    """``TSUMUGI_METRICS.writeDataPoint`` taking a Python point (M-2: indexes, blobs, doubles)."""

    def write(point: Any) -> None:
        dataset.writeDataPoint(to_js_value(point))

    return write


class TsumugiJobShard(HostedCoordinator):
    """One job shard (``JOB_SHARD``): the RPC surface of ``ports.ShardRpc`` plus the alarm tick (J-161)."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        bindings = self.worker_env
        database = bindings.get("TSUMUGI_DB")
        metrics = bindings.get("TSUMUGI_METRICS")  # optional (J-6): one point per terminal snapshot (J-194)
        self.shard = JobShard(
            self.object_name,
            self.sql,
            clock=SystemClock(),
            alarm=self.alarm_port,
            queue=bindings.TSUMUGI_QUEUE,
            read_model=None if database is None else D1ReadModelWriter(database),
            shards=bindings.get("JOB_SHARD"),
            runs=bindings.get("RUN"),
            rand=random.random,
            metrics=None if metrics is None else AnalyticsEngineWriter(_data_point_writer(metrics)),
        )

    async def alarm(self, alarm_info: Any = None) -> None:
        await self.shard.alarm()

    async def enqueue_many(self, inputs: Any, settings: Any = None) -> Any:
        ids: Sequence[str] = await self.shard.enqueue_many(to_py_value(inputs), to_py_value(settings))
        return to_js_value(list(ids))

    async def report(self, job_id: str, outcome: Any) -> None:
        await self.shard.report(job_id, to_py_value(outcome))

    async def heartbeat(self, job_id: str, progress: Any = None, attempt: Any = None) -> Any:
        return to_js_value(await self.shard.heartbeat(job_id, to_py_value(progress), _opt_int(attempt)))

    async def claim(self, job_id: str) -> bool:
        return await self.shard.claim(job_id)

    async def expire(self, job_id: str) -> bool:
        return await self.shard.expire(job_id)

    async def retry(self, job_id: str) -> Any:
        return to_js_value(await self.shard.retry(job_id))

    async def cancel(self, job_id: str) -> Any:
        return to_js_value(await self.shard.cancel(job_id))

    async def reschedule(
        self, job_id: str, run_at: Any = None, delay_ms: Any = None, priority: Any = None
    ) -> Any:
        priority_value = to_py_value(priority)
        result = await self.shard.reschedule(
            job_id,
            run_at=_opt_int(run_at),
            delay_ms=_opt_int(delay_ms),
            priority=None if priority_value is None else float(priority_value),
        )
        return to_js_value(result)

    async def mutate_many(self, action: str, job_ids: Any) -> Any:
        return to_js_value(await self.shard.mutate_many(action, to_py_value(job_ids)))

    async def configure(self, settings: Any) -> Any:
        return to_js_value(await self.shard.configure(to_py_value(settings)))

    async def update_policy(self, patch: Any) -> Any:
        return to_js_value(await self.shard.update_policy(to_py_value(patch)))

    async def reset_policy(self, settings: Any = None) -> Any:
        return to_js_value(await self.shard.reset_policy(to_py_value(settings)))

    async def diagnostics(self) -> Any:
        return to_js_value(await self.shard.diagnostics())

    async def state_of(self, job_id: str) -> Any:
        return to_js_value(await self.shard.state_of(job_id))


def _opt_int(value: Any) -> int | None:
    """An optional integer argument from JS, where every number is a double."""
    value = to_py_value(value)
    return None if value is None else int(value)
