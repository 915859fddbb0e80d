"""Serve the REST app with uvicorn on 127.0.0.1 in a background thread: over the recording harness, fully
configured, or over a real local runtime (``serve_runtime``)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import uvicorn
from tests.api.rest_harness import NOW, TOKEN, Harness, job, make_harness

from tsumugi import Tsumugi, bearer_auth, define_tsumugi
from tsumugi.api import create_rest_app
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.metrics_reader import LocalMetricsReader
from tsumugi.storage.read_model_writer import LocalMetricsWriter

SCHEDULES = [
    {"name": "nightly", "kind": "job", "target": "MAIL", "every_ms": None, "cron": "0 3 * * *",
     "overlap": "skip", "next_run_at": NOW, "last_run_at": None, "last_fired_at": None, "last_job_id": None,
     "last_run_id": None, "last_skipped_at": None, "skipped_count": 0, "last_error": None},
]  # fmt: skip


async def _start_run(env: Any, flow: str, input: Any, local_id: str | None, deadline_ms: int | None) -> str:
    return f"{flow}:{local_id or 'generated'}"


async def _run_control(env: Any, run_id: str, action: str) -> dict[str, Any]:
    return {"ok": False, "reason": "gone"}


async def _run_event(env: Any, run_id: str, event: str, payload: Any) -> dict[str, Any]:
    return {"ok": False, "reason": "gone"}  # ADR-0148: an unknown run, 404


async def _schedules(env: Any) -> list[dict[str, Any]]:
    return SCHEDULES


async def seeded_harness(db_path: str) -> Harness:
    """A harness with every optional feature configured and a few rows of each kind."""
    db = SqliteDatabase(db_path)
    apply_migrations(db)
    harness = make_harness(db)
    await harness.add_jobs(
        job("MAIL#0:a1"), job("MAIL#0:f1", state="FAILED"), job("SMS#0:c1", state="COMPLETED")
    )
    await LocalMetricsWriter(db).write([job("SMS#0:c1", state="COMPLETED", dispatched_at=NOW - 50)])
    reader = LocalMetricsReader(db, harness.clock)
    harness.options = replace(
        harness.options,
        flows=("signup",),
        start_run=_start_run,
        run_control=_run_control,
        run_event=_run_event,
        schedules=_schedules,
        metrics=lambda env: reader,
        ui=lambda: "<!doctype html><title>Tsumugi</title>",
    )
    return harness


def _loopback_socket() -> socket.socket:
    """A TCP socket on a free loopback port. IPPROTO_TCP, not 0: asyncio turns Nagle off only for sockets
    whose proto says TCP, and with Nagle on every keep-alive response waited 40 ms for a delayed ACK."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yields the base URL."""
    sock = _loopback_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="error", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)  # waiting for uvicorn to bind, bounded by a deadline (noqa: sleep-ok)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def app_of(harness: Harness) -> Any:
    return create_rest_app(harness.options)


class _Quick(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        return payload


@create_flow({"MAIL": _Quick})
def _SIGNUP(f: FlowBuilder) -> None:
    f.node("welcome", "MAIL", input=lambda run_input, done: run_input)


def runtime_app() -> Tsumugi:
    """The REST surface over the real engine: performers, a flow, a schedule, token auth."""
    return define_tsumugi(
        performers={"MAIL": _Quick, "SMS": _Quick},
        flows={"signup": _SIGNUP},
        schedules={"nightly": {"binding": "MAIL", "cron": "0 3 * * *", "payload": {}}},
        auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
    )


@contextmanager
def serve_runtime(state_dir: Path) -> Iterator[str]:
    """``runtime_app`` on a ``LocalRuntime`` under ``state_dir``, served by uvicorn in the runtime's own loop.

    Every request goes through the real client, shards, SQLite files and read model, as ``tsumugi dev``.
    """
    sock = _loopback_socket()
    port = sock.getsockname()[1]
    ready = threading.Event()
    servers: list[uvicorn.Server] = []
    failures: list[BaseException] = []

    async def main() -> None:
        app = runtime_app()
        runtime = LocalRuntime(app, state_dir, vars={"TSUMUGI_TOKEN": TOKEN}, exports={"MAIL": _Quick})
        await runtime.start()
        config = uvicorn.Config(app.asgi(runtime.env), log_level="error", lifespan="off", access_log=False)
        server = uvicorn.Server(config)
        servers.append(server)
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)  # uvicorn binding, in its own loop (noqa: sleep-ok)
        ready.set()
        try:
            await serving
        finally:
            await runtime.stop(grace_s=1.0)

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as error:  # reported to the test thread
            failures.append(error)
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not ready.wait(timeout=30) or failures:
        raise RuntimeError(f"the runtime did not start: {failures}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        servers[0].should_exit = True
        thread.join(timeout=30)
        sock.close()
