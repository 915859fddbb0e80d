#!/usr/bin/env python3
"""REST API benchmark: POST /api/jobs requests/s and GET /api/jobs latency over 100k read-model rows.

The server is the product as ``tsumugi dev`` runs it: a ``define_tsumugi`` app on the embedded local runtime
(shards, queue, projection) serving its REST surface (``Tsumugi.asgi``) under uvicorn in a child process on
127.0.0.1, with bearer auth, the migration check and a read model seeded with ``--rows`` jobs. POST
enqueues through the real shard engine into a paused binding (the jobs wait, so attempts do not compete
with the requests). Load comes from ``--clients`` concurrent httpx clients in this process.

Usage: ``.venv/bin/python bench/api_bench.py [--rows 100000] [--clients 20] [--requests 4000]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from tsumugi import BindingConfig, Performer, Policy, bearer_auth, define_tsumugi
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_writer import D1ReadModelWriter

TOKEN = "bench-token"
STATES = ("SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED")
NOW_MS = 1_700_000_000_000
SEED_CHUNK = 5_000  # rows per upsert batch while seeding


def snapshot(job_id: str, seq: int, rand: random.Random) -> dict[str, Any]:
    created = NOW_MS - rand.randrange(30 * 86_400_000)
    return {
        "id": job_id, "seq": seq, "binding": rand.choice(("MAIL", "SMS", "PUSH")),
        "state": rand.choice(STATES), "priority": rand.randrange(5), "attempts": rand.randrange(3),
        "max_attempts": 3, "concurrency_key": None, "unique_key": None, "guarantee": "at-least-once",
        "created_at": created, "updated_at": created + rand.randrange(600_000), "dispatched_at": None,
        "run_after": created, "payload": '{"n":1}', "run_id": None, "node_id": None, "attempts_log": [],
    }  # fmt: skip


async def seed(path: str, rows: int) -> None:
    db = SqliteDatabase(path)
    apply_migrations(db)
    writer = D1ReadModelWriter(db)
    rand = random.Random(1)
    for start in range(0, rows, SEED_CHUNK):
        await writer.upsert_jobs(
            [snapshot(f"MAIL#0:seed{i}", 1, rand) for i in range(start, min(rows, start + SEED_CHUNK))]
        )
    db.close()


class Noop(Performer):
    async def perform(self, payload: Any, ctx: Any) -> None:
        return None


def serve(state_dir: str, port: int) -> None:
    """Child process: the app's REST surface on the local runtime, over the seeded read model."""
    import uvicorn

    paused = BindingConfig(policy=Policy(paused=True))
    app = define_tsumugi(
        performers={"MAIL": Noop, "SMS": Noop, "PUSH": Noop},
        bindings={"MAIL": paused},
        auth=bearer_auth(lambda e: e.TSUMUGI_TOKEN),
    )

    async def run() -> None:
        runtime = LocalRuntime(app, Path(state_dir), vars={"TSUMUGI_TOKEN": TOKEN}, cron=False)
        await runtime.start()
        config = uvicorn.Config(
            app.asgi(runtime.env), host="127.0.0.1", port=port, log_level="error", access_log=False
        )
        try:
            await uvicorn.Server(config).serve()
        finally:
            await runtime.stop()

    asyncio.run(run())


async def load(base_url: str, clients: int, requests: int, call: str) -> tuple[float, list[float]]:
    """Run ``requests`` calls split over ``clients`` concurrent connections; returns (seconds, latencies)."""
    latencies: list[float] = []
    headers = {"authorization": f"Bearer {TOKEN}"}

    async def worker(count: int) -> None:
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
            for _ in range(count):
                began = time.perf_counter()
                if call == "post":
                    response = await client.post("/api/jobs", json={"binding": "MAIL", "payload": {"n": 1}})
                    expected = 201
                else:
                    response = await client.get("/api/jobs")
                    expected = 200
                latencies.append(time.perf_counter() - began)
                if response.status_code != expected:
                    raise RuntimeError(f"{call}: {response.status_code} {response.text[:200]}")

    began = time.perf_counter()
    await asyncio.gather(*(worker(requests // clients) for _ in range(clients)))
    return time.perf_counter() - began, latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def wait_ready(base_url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base_url}/api/openapi.json", headers={"authorization": f"Bearer {TOKEN}"}, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "read_model.sqlite3")  # where the local runtime keeps TSUMUGI_DB
        began = time.perf_counter()
        await seed(path, args.rows)
        print(f"seeded {args.rows} read-model rows in {time.perf_counter() - began:.1f}s")
        port = free_port()
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", folder, "--port", str(port)], env=os.environ
        )
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_ready(base_url)
            server = psutil.Process(child.pid)
            await load(base_url, args.clients, args.clients * 10, "get")  # warm up
            for call, label in (
                ("get", f"GET /api/jobs (default page, {args.rows} rows)"),
                ("post", "POST /api/jobs"),
            ):
                cpu_before = sum(server.cpu_times()[:2])
                seconds, lat = await load(base_url, args.clients, args.requests, call)
                cpu_ms = (sum(server.cpu_times()[:2]) - cpu_before) * 1000 / len(lat)
                print(
                    f"{label}, {args.clients} clients: {len(lat) / seconds:.0f} req/s, "
                    f"p50 {percentile(lat, 0.5) * 1000:.2f} ms, p99 {percentile(lat, 0.99) * 1000:.2f} ms, "
                    f"mean {statistics.mean(lat) * 1000:.2f} ms, server CPU {cpu_ms:.2f} ms/request"
                )
        finally:
            child.terminate()
            child.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=4_000)
    parser.add_argument("--serve", metavar="DB")
    parser.add_argument("--port", type=int, default=0)
    parsed = parser.parse_args()
    if parsed.serve:
        serve(parsed.serve, parsed.port)
    else:
        asyncio.run(main(parsed))
