#!/usr/bin/env python3
"""Benchmarks of the embedded local runtime, printed in one run.

1. end to end: no-op jobs enqueued, dispatched, performed, reported and COMPLETED (jobs/s);
2. ``enqueue_many`` into a paused binding (jobs/s), against raw ``sqlite3`` ``executemany`` into the
   same ``job`` table, with the ratios;
3. memory: RSS of the process with 0, 10k and 100k waiting jobs;
4. the cost of one tick that dispatches 100 jobs, with 1k and with 100k ready jobs behind it
   (spec README decision 5: a tick costs the same at any backlog size).

Every rate is given per wall second and per CPU second of this process: the machine may be shared,
and the CPU figure does not depend on what else runs.

Usage: ``.venv/bin/python bench/local_runtime_bench.py [--jobs 20000] [--backlog 100000]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
from peers import Noop, drained

from tsumugi.application import define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.queue_consumer import DEFAULT_BATCH_SIZE
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.shard_schema import ensure_shard_schema
from tsumugi.testing.fakes import FakeAlarm, FakeQueue

CHUNK = 1_000  # jobs per enqueue_many call, and rows per raw executemany transaction
TICK_WINDOW = 100  # jobs one measured tick dispatches (the policy's concurrency)
TICK_SAMPLES = 20  # measured ticks per backlog size; the median is reported


class Parked(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


APP = define_tsumugi(
    performers={"Noop": Noop, "Parked": Parked},
    bindings={
        # A local runtime has no per-invocation cost, so let one tick dispatch a large window.
        "Noop": {"policy": {"concurrency": 2_000}},
        "Parked": {"policy": {"paused": True}},  # nothing dispatches: a pure backlog
    },
)


async def end_to_end(jobs: int, batch_size: int, state_dir: Path) -> tuple[float, float]:
    """Returns (jobs per wall second, jobs per CPU second of this process and its read model writer).

    The CPU figure does not depend on what else the machine runs; the wall figure does.
    """
    runtime = LocalRuntime(APP, state_dir, exports={"Noop": Noop}, batch_size=batch_size)
    await runtime.start()
    shard_file = state_dir / "shards" / "Noop%230.sqlite3"
    started, cpu_started, ran_before = time.perf_counter(), peers.cpu_time(), peers.PERFORMED.count
    for offset in range(0, jobs, CHUNK):
        inputs = [{"binding": "Noop", "payload": {"n": n}} for n in range(offset, min(jobs, offset + CHUNK))]
        await APP.enqueue_many(runtime.env, inputs)
    await drained(shard_file, jobs, ran_before=ran_before)  # a seek per state, not a count of every job
    elapsed, cpu = time.perf_counter() - started, peers.cpu_time() - cpu_started
    await runtime.stop()
    return jobs / elapsed, jobs / cpu


class RawInserts:
    """Raw sqlite3 inserts of the rows a plain ``enqueue_many`` writes into the shard's ``job`` table.

    The same 16 columns (ADR-0120), one transaction per chunk, into a database of its own.
    """

    COLUMNS = (
        "id, binding, state, ready, lane_at, priority, attempts, max_attempts, guarantee, timeout_ms, "
        "backoff, run_after, created_at, updated_at, payload, version"
    )
    BACKOFF = '{"kind":"exponential","baseMs":1000,"factor":2,"maxMs":3600000,"jitter":true}'

    def __init__(self, path: Path) -> None:
        ensure_shard_schema(SqliteExecutor(path))
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.sql = f"INSERT INTO job ({self.COLUMNS}) VALUES ({', '.join('?' * 16)})"
        self.spent = self.cpu = 0.0
        self.rows = 0

    def chunk(self, start: int, end: int) -> None:
        started, cpu_started = time.perf_counter(), time.process_time()
        now_ms = time.time_ns() // 1_000_000
        version = now_ms * 1000
        batch = [
            (f"Parked#0:raw{n:020d}", "Parked", "SCHEDULED", 1, 0, 0, 0, 3, "at-least-once", 60_000,
             self.BACKOFF, now_ms, now_ms, now_ms, f'{{"n":{n}}}', version)
            for n in range(start, end)
        ]  # fmt: skip
        self.db.execute("BEGIN")
        self.db.executemany(self.sql, batch)
        self.db.execute("COMMIT")
        self.spent += time.perf_counter() - started
        self.cpu += time.process_time() - cpu_started
        self.rows += end - start

    def close(self) -> tuple[float, float]:
        self.db.close()
        return self.rows / self.spent, self.rows / self.cpu


async def enqueue_rate(
    backlog: int, state_dir: Path, raw: RawInserts
) -> tuple[float, float, list[tuple[int, float]]]:
    """Enqueue ``backlog`` jobs into the paused binding, each chunk followed by the same raw chunk.

    Interleaving the two keeps a change in the machine's load from favouring either side of the ratio.
    Returns jobs per wall second and per CPU second inside ``enqueue_many``, and (waiting, RSS MiB) samples.
    """
    runtime = LocalRuntime(APP, state_dir, exports={"Parked": Parked})
    await runtime.start()
    process = psutil.Process()
    samples = [(0, process.memory_info().rss / 2**20)]
    spent = cpu = 0.0
    for offset in range(0, backlog, CHUNK):
        end = min(backlog, offset + CHUNK)
        inputs = [{"binding": "Parked", "payload": {"n": n}} for n in range(offset, end)]
        started, cpu_started = time.perf_counter(), time.process_time()
        await APP.enqueue_many(runtime.env, inputs)
        spent += time.perf_counter() - started
        cpu += time.process_time() - cpu_started
        raw.chunk(offset, end)
        await asyncio.sleep(0)  # let the ticks the enqueues armed run, outside the timing
        waiting = end
        if waiting in (10_000, backlog):
            await asyncio.sleep(0.5)
            gc.collect()
            samples.append((waiting, process.memory_info().rss / 2**20))
    await runtime.stop()
    return backlog / spent, backlog / cpu, samples


async def tick_cost(ready: int, path: Path) -> tuple[float, float, int]:
    """A tick that dispatches ``TICK_WINDOW`` jobs with ``ready`` jobs ready: median wall ms, CPU ms and
    SQLite VM instructions (counted in hundreds: exact, and independent of the machine's load).

    The engine alone, on a shard file: each measured tick starts with an empty outbox and nothing in
    flight, so it does the same work whatever the backlog; only the backlog size differs.
    """
    clock = FixedClock(1_700_000_000_000)
    sql = SqliteExecutor(path)
    vm_steps = [0]

    def count_step() -> int:
        vm_steps[0] += 1
        return 0  # go on

    alarm, queue = FakeAlarm(), FakeQueue()
    shard = JobShard("Tick#0", sql, clock=clock, alarm=alarm, queue=queue)
    settings = {"policy": {"concurrency": TICK_WINDOW}}
    for offset in range(0, ready, CHUNK):
        items = [{"binding": "Tick", "payload": {"n": n}} for n in range(offset, min(ready, offset + CHUNK))]
        await shard.enqueue_many(items, settings)
    walls: list[float] = []
    cpus: list[float] = []
    steps: list[int] = []
    sql.set_progress_handler(count_step, 100)
    for _ in range(TICK_SAMPLES):
        sql.execute("DELETE FROM outbox")  # the projection is measured end to end, not here
        clock.set(clock.now() + 1)
        started, cpu_started, steps_before = time.perf_counter(), time.process_time(), vm_steps[0]
        await shard.alarm()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
        steps.append(vm_steps[0] - steps_before)
        done = {"ok": True, "result": None, "attempt": 1}
        # Outside the timing: complete them, so the next tick again finds nothing in flight, and enqueue
        # as many again, so the backlog stays at ``ready``.
        await shard.report_many([(message["jobId"], done) for message in queue.take()])
        more = [{"binding": "Tick", "payload": {"n": n}} for n in range(TICK_WINDOW)]
        await shard.enqueue_many(more, settings)
    sql.close()
    middle = TICK_SAMPLES // 2
    return sorted(walls)[middle] * 1000, sorted(cpus)[middle] * 1000, sorted(steps)[middle] * 100


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="no-op jobs for the end-to-end run")
    parser.add_argument("--backlog", type=int, default=100_000, help="waiting jobs for enqueue and memory")
    parser.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="queue consumer batch size"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsumugi-bench-") as scratch:
        root = Path(scratch)
        e2e, e2e_cpu = await end_to_end(args.jobs, args.batch_size, root / "e2e")
        inserts = RawInserts(root / "raw.sqlite3")
        enqueue, enqueue_cpu, samples = await enqueue_rate(args.backlog, root / "backlog", inserts)
        raw, raw_cpu = inserts.close()
        ticks = [(n, *await tick_cost(n, root / f"tick{n}.sqlite3")) for n in (1_000, args.backlog)]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    platform = f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} cpus"
    print(f"{platform}, load average {load}")
    print(f"end to end, no-op jobs:       {e2e:10,.0f} jobs/s  ({args.jobs:,} jobs, batch {args.batch_size})")
    print(f"  per CPU second:             {e2e_cpu:10,.0f} jobs/s")
    print(f"enqueue_many (chunks of {CHUNK}): {enqueue:10,.0f} jobs/s  ({args.backlog:,} jobs)")
    print(f"  per CPU second:             {enqueue_cpu:10,.0f} jobs/s")
    print(f"raw sqlite3 executemany:      {raw:10,.0f} rows/s")
    print(f"  per CPU second:             {raw_cpu:10,.0f} rows/s")
    print(
        f"enqueue_many / raw:           {enqueue / raw:10.1%}  (per CPU second: {enqueue_cpu / raw_cpu:.1%})"
    )
    print(f"end to end / raw:             {e2e / raw:10.1%}  (per CPU second: {e2e_cpu / raw_cpu:.1%})")
    for waiting, rss in samples:
        print(f"RSS with {waiting:>7,} waiting jobs: {rss:8.1f} MiB")
    print(f"(ticks: median of {TICK_SAMPLES})")
    for ready, wall_ms, cpu_ms, steps in ticks:
        label = f"tick dispatching {TICK_WINDOW} of {ready:>7,} ready:"
        print(f"{label} {wall_ms:6.2f} ms  ({cpu_ms:.2f} ms CPU, {steps:,} SQLite VM steps)")


if __name__ == "__main__":
    asyncio.run(main())
