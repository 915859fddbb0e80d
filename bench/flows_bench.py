#!/usr/bin/env python3
"""Benchmark of a wide fan-out run on the embedded local runtime, printed in one run.

1. start to finish: ``start`` of a run whose one fan-out node has N no-op children, until the run is
   COMPLETED (wall seconds, CPU seconds of this process);
2. the same N no-op jobs enqueued directly with ``enqueue_many``, until all are COMPLETED;
3. per-node overhead: what the run costs per child beyond the plain job (wall and CPU), and the ratio.

The two alternate for ``--trials`` rounds (3 by default) and the medians are shown, since one run of
either moves by 10-30% on a shared machine.

Usage: ``.venv/bin/python bench/flows_bench.py [--nodes 10000] [--batch-size 1000] [--trials 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import peers

from tsumugi.application import Tsumugi, define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

CHUNK = 1_000  # jobs per enqueue_many call in the baseline
# How often both sides look for their end. Each look costs a call into a coordinator (about 50 µs), and
# a side is seen done up to one poll late: at 50 ms that added about 25 ms to the plain jobs' 0.4 s, which
# pulled the printed ratio toward 1.
POLL_S = 0.005


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"Noop": Noop}
flow = create_flow(PERFORMERS)


@flow
def WIDE(f: FlowBuilder) -> None:
    f.fan_out("each", "Noop", over=lambda i, d: range(i["n"]), input=lambda item, i, index: {"n": item})


def _app(nodes: int) -> Tsumugi:
    return define_tsumugi(
        performers=PERFORMERS,
        flows={"WIDE": WIDE},
        runs={"max_nodes": nodes + 1},  # the container counts as a node (F-56)
        # A local runtime has no per-invocation cost, so let one tick dispatch a large window.
        bindings={"Noop": {"policy": {"concurrency": 2_000}}},
    )


async def run_to_completion(nodes: int, batch_size: int, state_dir: Path) -> tuple[float, float]:
    """(wall s, CPU s) from ``start`` until the run is COMPLETED."""
    app = _app(nodes)
    async with LocalRuntime(app, state_dir, exports=PERFORMERS, batch_size=batch_size, cron=False) as runtime:
        started, cpu_started = time.perf_counter(), peers.cpu_time()
        run = app.run_for(runtime.env, await app.start(runtime.env, "WIDE", {"n": nodes}))
        while (state := await run.state()) == "RUNNING":
            await asyncio.sleep(POLL_S)
        elapsed, cpu = time.perf_counter() - started, peers.cpu_time() - cpu_started
    if state != "COMPLETED":
        raise SystemExit(f"the run ended {state}")
    return elapsed, cpu


async def plain_jobs(nodes: int, batch_size: int, state_dir: Path) -> tuple[float, float]:
    """(wall s, CPU s) to enqueue ``nodes`` no-op jobs and see every one COMPLETED."""
    app = _app(nodes)
    async with LocalRuntime(app, state_dir, exports=PERFORMERS, batch_size=batch_size, cron=False) as runtime:
        shard = runtime.env["JOB_SHARD"].get("Noop#0")
        started, cpu_started = time.perf_counter(), peers.cpu_time()
        ids: list[str] = []
        for offset in range(0, nodes, CHUNK):
            count = min(CHUNK, nodes - offset)
            ids += await app.enqueue_many(
                runtime.env, [{"binding": "Noop", "payload": {"n": n}} for n in range(count)]
            )
        while await shard.state_of(ids[-1]) != "COMPLETED" or await shard.state_of(ids[0]) != "COMPLETED":
            await asyncio.sleep(POLL_S)
        while (await shard.diagnostics())["active"]:
            await asyncio.sleep(POLL_S)
        elapsed, cpu = time.perf_counter() - started, peers.cpu_time() - cpu_started
    return elapsed, cpu


async def main(nodes: int, batch_size: int, trials: int) -> None:
    runs: list[tuple[float, float]] = []
    plain: list[tuple[float, float]] = []
    for trial in range(trials):  # alternating, so a machine that speeds up or slows down moves both
        with tempfile.TemporaryDirectory(prefix="tsumugi-flows-bench-") as root:
            runs.append(await run_to_completion(nodes, batch_size, Path(root) / "run"))
            plain.append(await plain_jobs(nodes, batch_size, Path(root) / "jobs"))
        (run_s, _), (plain_s, _) = runs[-1], plain[-1]
        print(f"trial {trial + 1}/{trials}: run {run_s:.2f} s, plain {plain_s:.2f} s, {run_s / plain_s:.2f}x")
    run_wall, run_cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
    jobs_wall, jobs_cpu = statistics.median(w for w, _ in plain), statistics.median(c for _, c in plain)
    ratios = sorted(r[0] / p[0] for r, p in zip(runs, plain, strict=True))
    print(f"fan-out run, {nodes:,} children (consumer batch {batch_size}), median of {trials}")
    _figures("start to finish", run_wall, run_cpu, nodes, "per node")
    print(f"plain jobs, {nodes:,} (enqueue_many to COMPLETED), median of {trials}")
    _figures("enqueue to finish", jobs_wall, jobs_cpu, nodes, "per job")
    overhead_wall = (run_wall - jobs_wall) / nodes * 1e3
    overhead_cpu = (run_cpu - jobs_cpu) / nodes * 1e3
    print(f"per-node overhead of the run: {overhead_wall:.3f} ms wall, {overhead_cpu:.3f} ms CPU")
    spread = f"trials {ratios[0]:.2f}-{ratios[-1]:.2f}x"
    print(f"run / plain jobs: {run_wall / jobs_wall:.2f}x wall, medians ({spread}; target: at most 1.5x)")


def _figures(label: str, wall_s: float, cpu_s: float, count: int, per: str) -> None:
    print(f"  {label:<22} {wall_s:8.2f} s wall  {cpu_s:8.2f} s CPU")
    print(f"  {per:<22} {wall_s / count * 1e3:8.3f} ms wall {cpu_s / count * 1e3:8.3f} ms CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000, help="fan-out children (default 10000)")
    parser.add_argument("--batch-size", type=int, default=1_000, help="dispatch messages per consumer batch")
    parser.add_argument("--trials", type=int, default=3, help="alternating trials of each, medians shown")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.nodes, arguments.batch_size, arguments.trials))
