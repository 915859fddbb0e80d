"""Serve the REST app with uvicorn on 127.0.0.1 in a background thread, fully configured."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import uvicorn
from tests.api.rest_harness import NOW, Harness, job, make_harness

from tsumugi.api import create_rest_app
from tsumugi.projection.local_metrics import LocalMetricsReader, LocalMetricsWriter
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations

SCHEDULES = [
    {"name": "nightly", "kind": "job", "target": "MAIL", "every_ms": None, "cron": "0 3 * * *",
     "overlap": "skip", "next_run_at": NOW, "last_run_at": None, "last_fired_at": None, "last_job_id": None,
     "last_run_id": None, "last_skipped_at": None, "skipped_count": 0, "last_error": None},
]  # fmt: skip


async def _start_run(env: Any, flow: str, input: Any, local_id: str | None, deadline_ms: int | None) -> str:
    return f"{flow}:{local_id or 'generated'}"


async def _run_control(env: Any, run_id: str, action: str) -> dict[str, Any]:
    return {"ok": False, "reason": "gone"}


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
        schedules=_schedules,
        metrics=lambda env: reader,
        ui=lambda: "<!doctype html><title>Tsumugi</title>",
    )
    return harness


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="error", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)  # noqa: sleep-ok  (waiting for uvicorn to bind, bounded by a deadline)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def app_of(harness: Harness) -> Any:
    return create_rest_app(harness.options)
