"""The flow and schedule Durable Objects: ``TsumugiRun`` and ``TsumugiScheduler`` (S-rules).

Unlike the job shard these need the app's definitions (flows, run settings, schedules, shard counts),
so the entry module subclasses them and sets ``app`` to its ``define_tsumugi`` result, as the original's
``class TsumugiRun extends tsumugi.runClass {}`` does.
"""
# F-28

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from tsumugi.clock import SystemClock
from tsumugi.coordinator.run import RunCoordinator
from tsumugi.coordinator.scheduler import Scheduler
from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.cloudflare.durable_objects import HostedCoordinator
from tsumugi.runtimes.cloudflare.js_conversion import (
    py_objects,
    py_optional_int,
    py_optional_object,
    to_js_value,
    to_py_value,
)
from tsumugi.runtimes.cloudflare.js_objects import JsValue
from tsumugi.runtimes.cloudflare.rpc_stubs import DurableObjectNamespaceClient
from tsumugi.storage.read_model_writer import D1ReadModelWriter

if TYPE_CHECKING:
    from tsumugi.application.tsumugi import Tsumugi


def shard_counts(app: Tsumugi) -> dict[str, int]:
    """Shards per binding, so flow nodes and scheduled jobs route like every other enqueue."""
    # J-19
    return {binding: config.shards for binding, config in app.binding_configs.items()}


class RunObject(HostedCoordinator):
    """One run's coordinator (``RUN``); its Durable Object name is the run id."""

    app: ClassVar[Tsumugi]

    @cached_property
    def run(self) -> RunCoordinator:
        """The run's coordinator, built on first use, once the run id (the object's name) is known."""
        app = type(self).app
        database = self.worker_env.adapter("TSUMUGI_DB", D1Database)
        return RunCoordinator(
            self.object_name,
            self.sql,
            clock=SystemClock(),
            alarm=self.alarm_port,
            shards=self.worker_env.JOB_SHARD,
            runs=self.worker_env.RUN,
            read_model=None if database is None else D1ReadModelWriter(database),
            flows=app.flows or {},
            settings=app.runs,
            shards_of=shard_counts(app),
            binding_settings=app.static_settings,  # J-50, for node jobs
        )

    async def alarm(self, alarm_info: JsValue = None) -> None:
        await self.run.alarm()

    async def start(
        self,
        flow: str,
        input: JsValue,
        deadline_ms: JsValue = None,
        parent: JsValue = None,
        depth: JsValue = 0,
    ) -> JsValue:
        result = await self.run.start(
            flow,
            to_py_value(input),
            py_optional_int(deadline_ms),
            _parent(parent),
            py_optional_int(depth) or 0,
        )
        return to_js_value(result)

    async def state(self) -> JsValue:
        return to_js_value(await self.run.state())

    async def notify(self, events: JsValue) -> None:
        await self.run.notify(py_objects(events))

    async def notify_child(self, node_id: str, child_run_id: str, state: str) -> None:
        await self.run.notify_child(node_id, child_run_id, state)

    async def cancel(self) -> JsValue:
        return to_js_value(await self.run.cancel())

    async def retry(self) -> JsValue:
        return to_js_value(await self.run.retry())

    async def send_event(self, event: str, payload: JsValue = None) -> JsValue:
        """ADR-0148: an event for the run's wait-for-event node, routed like every other run RPC."""
        return to_js_value(await self.run.send_event(str(to_py_value(event)), to_py_value(payload)))


class SchedulerObject(HostedCoordinator):
    """The app's cron schedules (``SCHEDULER``): one instance fires every schedule on its alarm."""

    app: ClassVar[Tsumugi]

    @cached_property
    def scheduler(self) -> Scheduler:
        """The schedules' coordinator, built on first use."""
        app = type(self).app
        return Scheduler(
            self.sql,
            clock=SystemClock(),
            alarm=self.alarm_port,
            schedules=list(app.schedules or ()),
            shards=self.worker_env.JOB_SHARD,
            runs=self.worker_env.adapter("RUN", DurableObjectNamespaceClient),
            shards_of=shard_counts(app),
            binding_settings=app.static_settings,  # J-50, for scheduled jobs
        )

    async def alarm(self, alarm_info: JsValue = None) -> None:
        await self.scheduler.alarm()

    async def list(self) -> JsValue:
        return to_js_value(await self.scheduler.list())

    async def sync(self) -> None:
        await self.scheduler.sync()


def _parent(value: JsValue) -> dict[str, str] | None:
    """The parent of a child run (``{runId, nodeId}``), whose fields are strings."""
    parent = py_optional_object(value)
    if parent is None:
        return None
    fields = {key: item for key, item in parent.items() if isinstance(item, str)}
    if len(fields) != len(parent):
        raise TypeError("a child run's parent holds strings only")
    return fields
