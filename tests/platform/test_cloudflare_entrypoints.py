"""The Worker entry and Durable Object classes on CPython, with the ``workers`` SDK's runtime-only
modules stubbed (PLATFORM.md §4) and fake JS bindings: the wiring a real deploy runs, minus workerd.

Rules: J-7 (entry exports), J-17 (the DO name), J-22 (shard RPC), J-161/J-165 (alarm tick), J-192
(projection to D1), J-207 (queue and scheduled handlers), A-12 (fetch serves the ASGI app).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from tests.platform.fake_workers import (
    FakeD1,
    FakeDurableObjectStorage,
    FakeMessage,
    FakeNamespace,
    FakeQueue,
    workers_sdk_stubs,
)
from tests.platform.node_tooling import REPO_ROOT


@pytest.fixture(scope="module")
def sdk() -> Iterator[types.SimpleNamespace]:
    """The real ``workers`` SDK and our classes, imported with the runtime-only modules stubbed."""
    with workers_sdk_stubs():
        pytest.importorskip("workers", reason="the Workers SDK is missing: pip install workers-py")
        sys.path.insert(0, str(REPO_ROOT / "src"))
        try:
            yield types.SimpleNamespace(
                workers=importlib.import_module("workers"),
                objects=importlib.import_module("tsumugi.runtimes.cloudflare.durable_objects"),
                flows=importlib.import_module("tsumugi.runtimes.cloudflare.flow_objects"),
                entry_point=importlib.import_module("tsumugi.runtimes.cloudflare.worker_entry"),
                entry=importlib.import_module("entry"),
            )
        finally:
            sys.path.remove(str(REPO_ROOT / "src"))
            for name in ("entry", "app"):
                sys.modules.pop(name, None)


def migrated_d1() -> FakeD1:
    d1 = FakeD1()
    for path in sorted((REPO_ROOT / "migrations").glob("*.sql")):
        d1.conn.executescript(path.read_text(encoding="utf-8"))
    return d1


def durable_object_ctx(name: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(storage=FakeDurableObjectStorage(), id=types.SimpleNamespace(name=name))


def test_entry_exports_sdk_subclasses(sdk: types.SimpleNamespace) -> None:
    # J-7, A-72: what wrangler.jsonc binds is exported by main and is what the runtime can host.
    entry = sdk.entry
    for name in ("TsumugiJobShard", "TsumugiRun", "TsumugiScheduler"):
        assert issubclass(getattr(entry, name), sdk.workers.DurableObject)
    assert issubclass(entry.Default, sdk.workers.WorkerEntrypoint)
    assert entry.TsumugiRun.app is entry.Default.app


async def test_job_shard_object_enqueues_dispatches_projects_and_completes(
    sdk: types.SimpleNamespace,
) -> None:
    ctx = durable_object_ctx("Hello#0")
    queue, d1 = FakeQueue(), migrated_d1()
    env = types.SimpleNamespace(TSUMUGI_QUEUE=queue, TSUMUGI_DB=d1, JOB_SHARD=FakeNamespace({}))
    shard = sdk.entry.TsumugiJobShard(ctx, env)
    assert shard.object_name == "Hello#0"  # J-17
    (job_id,) = await shard.enqueue_many(
        [{"binding": "Hello", "payload": {"name": "cf", "loud": True}}], None
    )
    assert job_id.startswith("Hello#0:")
    assert ctx.storage.alarm_at is not None  # J-165: enqueue arms the alarm
    await shard.alarm()  # J-161: dispatch, then project
    (message,) = queue.bodies
    assert message["jobId"] == job_id and message["attempt"] == 1
    assert await shard.state_of(job_id) == "QUEUED"
    await shard.report(job_id, {"ok": True, "result": {"greeted": "cf"}, "attempt": 1})
    await shard.alarm()
    assert await shard.state_of(job_id) == "COMPLETED"
    state, result = d1.conn.execute("SELECT state, result FROM job WHERE id = ?", (job_id,)).fetchone()
    assert (state, result) == ("COMPLETED", '{"greeted":"cf"}')  # J-192
    assert ctx.storage.sql.open_cursors == 0  # every cursor released
    diagnostics = await shard.diagnostics()
    assert isinstance(diagnostics, dict)


async def test_run_and_scheduler_objects_host_their_coordinators(sdk: types.SimpleNamespace) -> None:
    env = types.SimpleNamespace(
        TSUMUGI_QUEUE=FakeQueue(),
        TSUMUGI_DB=migrated_d1(),
        JOB_SHARD=FakeNamespace({}),
        RUN=FakeNamespace({}),
    )
    run = sdk.entry.TsumugiRun(durable_object_ctx("run-1"), env)
    assert run.object_name == "run-1" and await run.state() is None
    scheduler = sdk.entry.TsumugiScheduler(durable_object_ctx("scheduler"), env)
    assert await scheduler.list() == []  # the example app defines no schedules


async def test_run_class_and_scheduler_class_are_bound_durable_objects(sdk: types.SimpleNamespace) -> None:
    # J-203, F-93, seed "Export TsumugiRun by extending the runClass included in the return value of
    # defineTsumugi": inside Workers the classes are the runtime's Durable Objects with the app set.
    app = sdk.entry.Default.app

    class TsumugiRun(app.run_class):  # type: ignore[misc, name-defined]
        pass

    assert issubclass(TsumugiRun, sdk.flows.RunObject) and TsumugiRun.app is app
    assert issubclass(app.scheduler_class, sdk.flows.SchedulerObject) and app.run_class is app.run_class
    env = types.SimpleNamespace(
        TSUMUGI_QUEUE=FakeQueue(),
        TSUMUGI_DB=migrated_d1(),
        JOB_SHARD=FakeNamespace({}),
        RUN=FakeNamespace({}),
    )
    run = TsumugiRun(durable_object_ctx("GREETINGS:r1"), env)
    assert run.object_name == "GREETINGS:r1" and await run.state() is None


class RecordingApp:
    """Stands in for a Tsumugi object: records what the handlers pass on."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    async def queue(self, batch: Any, env: Any, ctx: Any = None) -> None:
        self.calls.append(("queue", batch, env))
        for message in batch:
            message.ack()

    async def scheduled(self, controller: Any, env: Any, ctx: Any = None) -> int:
        self.calls.append(("scheduled", controller, env))
        return 0

    def asgi(self, env: Any) -> Starlette:
        async def jobs(request: Any) -> JSONResponse:
            return JSONResponse({"jobs": [], "token": env.TSUMUGI_TOKEN})

        return Starlette(routes=[Route("/api/jobs", jobs)])


async def test_queue_and_scheduled_handlers_reach_the_app_with_wrapped_bindings(
    sdk: types.SimpleNamespace,
) -> None:
    app = RecordingApp()
    handlers_class = type("Handlers", (sdk.entry_point.WorkerHandlers,), {"app": app})
    raw_env = types.SimpleNamespace(TSUMUGI_DB=FakeD1(), TSUMUGI_QUEUE=FakeQueue(), TSUMUGI_TOKEN="t")
    handlers = handlers_class(types.SimpleNamespace(), raw_env)
    message = FakeMessage({"jobId": "Hello#0:a", "attempt": 1}, attempts=1)
    await handlers.queue(types.SimpleNamespace(messages=[message]))
    await handlers.scheduled(types.SimpleNamespace(cron="17 * * * *"))
    (kind, batch, env), (kind2, controller, _) = app.calls
    assert kind == "queue" and [m.body for m in batch] == [{"jobId": "Hello#0:a", "attempt": 1}]
    assert message.acked == 1  # J-118: the consumer acks, the handler never retries
    assert kind2 == "scheduled" and controller.cron == "17 * * * *"
    assert env.TSUMUGI_TOKEN == "t" and type(env.TSUMUGI_DB).__name__ == "D1Database"


async def test_fetch_app_serves_app_routes_then_tsumugi_then_404(sdk: types.SimpleNamespace) -> None:
    env = types.SimpleNamespace(TSUMUGI_TOKEN="t")

    async def hello(request: Any) -> JSONResponse:
        return JSONResponse({"hello": True}, status_code=201)

    http_app = sdk.entry_point.build_http_app(
        RecordingApp(), env, lambda env: [Route("/hello", hello, methods=["POST"])]
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app), base_url="http://w") as client:
        assert (await client.post("/hello")).status_code == 201
        assert (await client.get("/api/jobs")).json() == {"jobs": [], "token": "t"}
        assert (await client.get("/nope")).status_code == 404  # the Tsumugi app answers the rest
    bare = sdk.entry_point.build_http_app(object(), env, None)  # no REST app exposed: fail closed (J-9)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=bare), base_url="http://w") as client:
        missing = await client.get("/api/jobs")
    assert (missing.status_code, missing.json()) == (404, {"error": "not found"})


async def test_performer_entrypoint_serves_a_remote_performer(sdk: types.SimpleNamespace) -> None:
    # J-62, J-63: the serving Worker's entrypoint runs the performer with a ctx that calls back.
    from tsumugi.performer import JobContext, Performer

    class Mailer(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> Any:
            await ctx.heartbeat(1.0)
            return {"to": payload["to"], "job": ctx.job_id, "env_token": self.env.TSUMUGI_TOKEN}

    beats: list[Any] = []

    async def heartbeat(progress: Any) -> dict[str, Any]:
        beats.append(progress)
        return {"ok": True, "cancelRequested": False}

    served = type("MailerEntrypoint", (sdk.entry_point.PerformerEntrypoint,), {"performer": Mailer})
    entrypoint = served(types.SimpleNamespace(), types.SimpleNamespace(TSUMUGI_TOKEN="t"))
    js_ctx = types.SimpleNamespace(
        jobId="Mailer#0:abc", attempt=1, deadlineAt=1_764_460_860_000, traceparent=None, heartbeat=heartbeat
    )
    result = await entrypoint.perform({"to": "a@b"}, js_ctx)
    assert result == {"to": "a@b", "job": "Mailer#0:abc", "env_token": "t"}
    assert beats == [1.0]


def test_durable_objects_answer_every_rpc_their_ports_name(sdk: types.SimpleNamespace) -> None:
    # J-22: each RPC the engine calls through a namespace stub exists on the hosted class, async, with the
    # port's positional parameters (RPC has no keywords, rpc_stubs places them).
    import inspect

    from tsumugi.coordinator.run_ports import RunPeer
    from tsumugi.ports import ShardRpc

    for protocol, hosted in ((ShardRpc, sdk.entry.TsumugiJobShard), (RunPeer, sdk.entry.TsumugiRun)):
        for name, declared in inspect.getmembers(protocol, inspect.isfunction):
            if name.startswith("_"):
                continue
            method = getattr(hosted, name)
            assert inspect.iscoroutinefunction(method), f"{hosted.__name__}.{name}"
            wanted = list(inspect.signature(declared).parameters)
            assert list(inspect.signature(method).parameters) == wanted, f"{hosted.__name__}.{name}"


async def test_job_shard_object_writes_one_metrics_point_per_terminal_job(sdk: types.SimpleNamespace) -> None:
    # J-194, M-2: with TSUMUGI_METRICS bound, each terminal snapshot becomes one Analytics Engine point
    points: list[Any] = []

    class Dataset:
        def writeDataPoint(self, point: Any) -> None:  # the JS spelling
            points.append(point)

    env = types.SimpleNamespace(
        TSUMUGI_QUEUE=FakeQueue(),
        TSUMUGI_DB=migrated_d1(),
        JOB_SHARD=FakeNamespace({}),
        TSUMUGI_METRICS=Dataset(),
    )
    shard = sdk.entry.TsumugiJobShard(durable_object_ctx("Hello#0"), env)
    (job_id,) = await shard.enqueue_many([{"binding": "Hello", "payload": {"name": "m"}}], None)
    await shard.alarm()
    assert points == []  # QUEUED is not terminal
    await shard.report(job_id, {"ok": True, "result": None, "attempt": 1})
    await shard.alarm()
    (point,) = points
    assert point["indexes"] == ["Hello"]
    assert point["blobs"] == ["COMPLETED", "Hello", "at-least-once"]
    assert point["doubles"][0] == 1  # attempts


async def test_a_shard_reached_without_its_name_learns_it_from_the_callers_stub(
    sdk: types.SimpleNamespace,
) -> None:
    # ADR-0130: a proxy forwarding by hex id drops ctx.id.name; the stub identifies the object and retries.
    from tsumugi.runtimes.cloudflare.rpc_stubs import DurableObjectNamespaceClient

    storage = FakeDurableObjectStorage()
    env = types.SimpleNamespace(
        TSUMUGI_QUEUE=FakeQueue(), TSUMUGI_DB=migrated_d1(), JOB_SHARD=FakeNamespace({})
    )
    unnamed = types.SimpleNamespace(storage=storage, id=types.SimpleNamespace(name=None))
    shard = sdk.entry.TsumugiJobShard(unnamed, env)
    with pytest.raises(sdk.objects.UnnamedObjectError):
        await shard.enqueue_many([{"binding": "Hello", "payload": {}}])

    client = DurableObjectNamespaceClient(FakeNamespace({"Hello#0": shard}))
    (job_id,) = await client.get("Hello#0").enqueue_many([{"binding": "Hello", "payload": {"name": "x"}}])
    assert job_id.startswith("Hello#0:") and shard.object_name == "Hello#0"

    # A new instance of the same object (after eviction) reads the stored name, again without ctx.id.name.
    again = sdk.entry.TsumugiJobShard(types.SimpleNamespace(storage=storage, id=unnamed.id), env)
    assert again.object_name == "Hello#0" and await again.state_of(job_id) == "SCHEDULED"
    await again.identify("Other#3")  # an object that knows its name keeps it
    assert again.object_name == "Hello#0"


async def test_a_name_from_ctx_id_is_kept_for_an_alarm_that_wakes_without_it(
    sdk: types.SimpleNamespace,
) -> None:
    # ADR-0130: workerd may wake an evicted object by its alarm with an empty ctx.id.name.
    storage = FakeDurableObjectStorage()
    env = types.SimpleNamespace(
        TSUMUGI_QUEUE=FakeQueue(), TSUMUGI_DB=migrated_d1(), JOB_SHARD=FakeNamespace({})
    )
    named = types.SimpleNamespace(storage=storage, id=types.SimpleNamespace(name="Hello#0"))
    first = sdk.entry.TsumugiJobShard(named, env)
    await first.enqueue_many([{"binding": "Hello", "payload": {}, "delayMs": 60_000}])
    woken = sdk.entry.TsumugiJobShard(
        types.SimpleNamespace(storage=storage, id=types.SimpleNamespace(name=None)), env
    )
    await woken.alarm()  # no UnnamedObjectError
    assert woken.object_name == "Hello#0"
