#!/usr/bin/env python3
"""Throughput with the throttling axes off and on, end to end on the local runtime, in one run.

"Off": no-op jobs without a concurrency key, default policy with a generous ``concurrency``.
"On": the same jobs, each with one of ``--keys`` concurrency keys, and all three axes set so that
every tick evaluates them without any of them binding: ``concurrency``, a global ``rate``, and
``per_key_concurrency`` plus ``per_key_rate`` (J-143, J-148, J-149a). The original measured ~17 %
lost throughput for its three axes (spec 7.10); this prints our ratio.

Usage: ``.venv/bin/python bench/throttling_bench.py [--jobs 10000] [--keys 100] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import peers

from tsumugi.application import define_tsumugi
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

CHUNK = 1_000  # jobs per enqueue_many call
POLL_S = 0.02
GENEROUS = 1_000_000_000  # tokens per second: checked every tick, never short


class Off(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class On(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


APP = define_tsumugi(
    performers={"Off": Off, "On": On},
    bindings={
        "Off": {"policy": {"concurrency": 2_000}},
        "On": {
            "policy": {
                "concurrency": 2_000,
                "rate": {"tokens": GENEROUS, "interval_ms": 1_000},
                "per_key_concurrency": 2_000,
                "per_key_rate": {"tokens": GENEROUS, "interval_ms": 1_000},
            }
        },
    },
)


def _completed(shard_file: Path) -> int:
    if not shard_file.exists():
        return 0
    with contextlib.closing(sqlite3.connect(shard_file)) as db:
        try:
            return int(db.execute("SELECT count(*) FROM job WHERE state = 'COMPLETED'").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


async def run(binding: str, jobs: int, keys: int, state_dir: Path) -> tuple[float, float]:
    """Enqueue ``jobs`` no-op jobs into ``binding`` and wait until all COMPLETED: (jobs/s, jobs/CPU s)."""
    runtime = LocalRuntime(APP, state_dir, exports={"Off": Off, "On": On}, cron=False)
    await runtime.start()
    shard_file = state_dir / "shards" / f"{binding}%230.sqlite3"
    started, cpu_started = time.perf_counter(), peers.cpu_time()
    for offset in range(0, jobs, CHUNK):
        inputs: list[dict[str, Any]] = []
        for n in range(offset, min(jobs, offset + CHUNK)):
            item: dict[str, Any] = {"binding": binding, "payload": {"n": n}}
            if binding == "On":
                item["concurrency_key"] = f"k{n % keys}"
            inputs.append(item)
        await APP.enqueue_many(runtime.env, inputs)
    while _completed(shard_file) < jobs:
        await asyncio.sleep(POLL_S)
    elapsed, cpu = time.perf_counter() - started, peers.cpu_time() - cpu_started
    await runtime.stop()
    return jobs / elapsed, jobs / cpu


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="no-op jobs per measurement")
    parser.add_argument("--keys", type=int, default=100, help="distinct concurrency keys when on")
    parser.add_argument("--rounds", type=int, default=3, help="alternating off/on rounds; best of each")
    args = parser.parse_args()
    best: dict[str, tuple[float, float]] = {"Off": (0.0, 0.0), "On": (0.0, 0.0)}
    with tempfile.TemporaryDirectory(prefix="tsumugi-throttling-") as scratch:
        for round_no in range(args.rounds):
            for binding in ("Off", "On"):  # alternating, so drift in machine load hits both alike
                wall, cpu = await run(binding, args.jobs, args.keys, Path(scratch) / f"{binding}{round_no}")
                best[binding] = (max(best[binding][0], wall), max(best[binding][1], cpu))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    platform = f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} cpus"
    print(f"{platform}, load average {load}")
    print(f"{args.jobs:,} no-op jobs end to end, best of {args.rounds} rounds")
    (off_wall, off_cpu), (on_wall, on_cpu) = best["Off"], best["On"]
    print(f"throttling off:            {off_wall:10,.0f} jobs/s  {off_cpu:10,.0f} jobs/CPU s")
    print(f"all three axes on:         {on_wall:10,.0f} jobs/s  {on_cpu:10,.0f} jobs/CPU s")
    print(f"  (on: {args.keys} concurrency keys, every axis evaluated each tick, none binding)")
    print(f"on / off:                  {on_wall / off_wall:10.1%}  {on_cpu / off_cpu:19.1%}")
    print(f"overhead (original ~17 %): {1 - on_wall / off_wall:10.1%}  {1 - on_cpu / off_cpu:19.1%}")


if __name__ == "__main__":
    asyncio.run(main())
