#!/usr/bin/env python3
"""Tsumugi's local runtime against a peer, Huey, measured side by side in one run.

The peers' workload: N no-op jobs wait in the queue; a worker process starts, and the drain is timed from
the moment the worker process is started until the last job is COMPLETED. Each system drains in a child
process of its own, so both pay their interpreter start and neither shares a core with the bench:

- Huey 3: ``SqliteHuey(fsync=False)`` and ``huey_consumer -k thread -w 1`` (its fastest durable setup);
  a job is done when the consumer signals ``SIGNAL_COMPLETE`` for it;
- Tsumugi: the local runtime (SQLite in WAL, ``synchronous=NORMAL``), at the default binding policy
  (concurrency 100) and with a wide one (concurrency 2,000); a job is done when its shard holds it
  COMPLETED. The jobs wait behind a pinned pause, which the worker lifts as it starts. Like Huey's
  signal, the no-op performer counts its attempts in the worker; the worker reads the shard's file only
  once all have run, until the last job is COMPLETED there (``drained``).

Trials alternate (Huey, default, wide, Huey, ...) so a change in the machine's load hits all three;
medians are reported. Also printed: CPU seconds per job of each drain, enqueueing while draining, and the
latency of one job on an idle runtime (enqueue to COMPLETED in the shard), p50 and p99.

The Tsumugi worker imports what a worker runs and no more: this script's own tools (argparse,
statistics, tempfile, compileall: about 10 ms) are imported where the parent uses them, so their start-up
is not charged to the drain. The worker imports this script as a module, from bytecode compiled before
the trials, as an app's worker imports its modules (run as a script, it was compiled afresh each time).
Huey's consumer is its own command line, and pays its own start-up.

Usage: ``.venv/bin/python bench/peers.py [--jobs 20000] [--trials 3] [--latency-jobs 200]``
(Huey comes from the ``bench`` extra: ``pip install -e .[bench]``). Nothing here asserts a figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import tsumugi
from tsumugi.application import Tsumugi, define_tsumugi
from tsumugi.client import shard_for
from tsumugi.core.states import JobState
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

CHUNK: Final = 1_000  # jobs per enqueue call, on both systems
WIDE: Final = {"policy": {"concurrency": 2_000}}
HUEY_APP: Final = textwrap.dedent(
    """
    import os, time
    from huey import SqliteHuey, signals

    huey = SqliteHuey(filename=os.environ["PEER_DB"], fsync=False)
    N, DONE = int(os.environ["PEER_N"]), os.environ["PEER_DONE"]
    done = 0

    @huey.task()
    def noop(n):
        return None

    @huey.signal(signals.SIGNAL_COMPLETE)
    def completed(signal, task):
        global done
        done += 1
        if done == N:
            with open(DONE + ".tmp", "w") as out:
                out.write(f"{time.time()} {time.process_time()}")
            os.replace(DONE + ".tmp", DONE)
    """
)


def cpu_time() -> float:
    """CPU seconds of this process and of its children: Tsumugi's runtime writes its read model in a child
    process (ADR-0170), whose time counts as the runtime's. Live children are read from ``/proc`` (Linux),
    finished ones from ``os.times``."""
    total = time.process_time()
    finished = os.times()
    total += finished.children_user + finished.children_system
    ticks = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    fields = stat[stat.rindex(")") + 2 :].split()  # after the command's name
                    total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


class Performed:
    """How many no-op attempts this process ran, and an event set once ``target`` of them had: the
    counterpart of Huey's completion signal. The bench's worker waits on it before it reads the shard."""

    def __init__(self) -> None:
        self.count = 0
        self.target: int | None = None
        self.reached: asyncio.Event | None = None

    def ran(self) -> None:
        self.count += 1
        if self.count == self.target and self.reached is not None:
            self.reached.set()

    async def wait_for(self, target: int) -> None:
        """Return once ``target`` attempts ran in this process, counted from its start."""
        self.target, self.reached = target, asyncio.Event()
        if self.count < target:
            await self.reached.wait()


PERFORMED: Final = Performed()


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        PERFORMED.ran()


def app(policy: str) -> Tsumugi:
    return define_tsumugi(performers={"Noop": Noop}, bindings={"Noop": WIDE} if policy == "wide" else {})


@dataclass(frozen=True)
class Drain:
    jobs_per_s: float
    cpu_per_job_us: float


# ------------------------------------------------------------------ Tsumugi


def noop_inputs(start: int, end: int) -> list[dict[str, Any]]:
    return [{"binding": "Noop", "payload": {"n": n}} for n in range(start, end)]


NOT_COMPLETED: Final = tuple(state.value for state in JobState if state is not JobState.COMPLETED)
STILL_THERE: Final = (  # a seek per state in the lane index, at any number of finished jobs
    f"SELECT EXISTS (SELECT 1 FROM job WHERE state IN ({', '.join('?' * len(NOT_COMPLETED))}))"
)


async def drained(shard_file: Path, jobs: int, *, ran_before: int = 0) -> None:
    """Return once the shard holds every one of its ``jobs`` COMPLETED, at a cost that does not grow
    with the jobs done and with no poll while they run.

    Huey's consumer signals each completion in its own process, at no cost to the drain. Here the
    no-op performer counts its attempts (``PERFORMED``); once ``jobs`` of them ran, the shard's file is
    read every millisecond until no job is in any state but COMPLETED, which its lane index answers
    with a seek per state. Every one of the ``jobs`` rows is in the shard by then (the backlog, or the
    worker's own enqueues before it waits), so none left in another state means all are COMPLETED;
    an attempt run twice only makes the reads start early. Counting COMPLETED rows instead walks
    every finished job (4 ms at 20,000 on a 2-core machine): polled every 10 ms in the worker's own
    thread, it took a quarter of the drain from the engine it measures. ``ran_before``: the attempts
    this process ran before these jobs (``PERFORMED.count`` then).
    """
    await PERFORMED.wait_for(ran_before + jobs)
    with contextlib.closing(sqlite3.connect(shard_file, timeout=5)) as db:
        while db.execute(STILL_THERE, NOT_COMPLETED).fetchone()[0]:
            await asyncio.sleep(0.001)


def awaiting_projection(shard_file: Path) -> int:
    with contextlib.closing(sqlite3.connect(shard_file, timeout=5)) as db:
        row = db.execute("SELECT (SELECT count(*) FROM outbox) + (SELECT count(*) FROM fresh)").fetchone()
        return int(row[0])


async def tsumugi_backlog(state: Path, jobs: int, policy: str) -> None:
    """N jobs wait in the shard behind a pinned pause, listed in the read model as waiting jobs are;
    then the runtime that enqueued them stops."""
    tsumugi = app(policy)
    async with LocalRuntime(tsumugi, state, exports={"Noop": Noop}, cron=False) as runtime:
        await shard_for(runtime.env, "Noop").update_policy({"paused": True})
        for offset in range(0, jobs, CHUNK):
            await tsumugi.enqueue_many(runtime.env, noop_inputs(offset, min(jobs, offset + CHUNK)))
        deadline = time.monotonic() + 60
        while awaiting_projection(state / "shards" / "Noop%230.sqlite3") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # the first projection of a new job waits a second (ADR-0119)


async def tsumugi_worker(state: Path, jobs: int, policy: str, done: Path, enqueue: bool) -> None:
    """The child: start the runtime, lift the pause, and report when every job is COMPLETED."""
    tsumugi = app(policy)
    shard_file = state / "shards" / "Noop%230.sqlite3"
    async with LocalRuntime(tsumugi, state, exports={"Noop": Noop}, cron=False) as runtime:
        await shard_for(runtime.env, "Noop").reset_policy(tsumugi.static_settings("Noop"))
        if enqueue:  # enqueue while draining: the producer shares the worker's process, as a server does
            for offset in range(0, jobs, CHUNK):
                batch = range(offset, min(jobs, offset + CHUNK))
                await tsumugi.enqueue_many(
                    runtime.env, [{"binding": "Noop", "payload": {"n": n}} for n in batch]
                )
                await asyncio.sleep(0)
        await drained(shard_file, jobs)
        partial = done.with_suffix(".tmp")  # renamed into place: the parent never reads a half-written file
        partial.write_text(f"{time.time()} {cpu_time()}")
        os.replace(partial, done)


def compile_package() -> None:
    """Compile Tsumugi's bytecode, so its workers start as an installed package does.

    pip compiled Huey's when it installed it; an editable checkout run with PYTHONDONTWRITEBYTECODE set
    would compile every module of Tsumugi afresh in each worker (a fifth of a second, charged to its drain).
    """
    import compileall  # the parent's tool only

    compileall.compile_dir(Path(tsumugi.__file__).parent, quiet=1)
    compileall.compile_file(__file__, quiet=1)  # the worker imports this module (``WORKER``)


def tsumugi_drain(jobs: int, policy: str, enqueue: bool = False) -> Drain:
    import tempfile  # the parent's tool only

    with tempfile.TemporaryDirectory(prefix="peers-tsumugi-") as tmp:
        state, done = Path(tmp) / "state", Path(tmp) / "done"
        if not enqueue:
            asyncio.run(tsumugi_backlog(state, jobs, policy))
        args = [str(state), str(jobs), policy, str(done), "1" if enqueue else "0"]
        return child_drain([sys.executable, "-c", WORKER, *args], jobs, done, cwd=str(Path(__file__).parent))


WORKER: Final = "import sys, peers; peers.worker(sys.argv[1:])"  # run from bench/: see the module docstring


def worker(argv: list[str]) -> None:
    """The worker's entry: ``state jobs policy done enqueue``, as ``tsumugi_drain`` passes them."""
    state, jobs, policy, done, enqueue = argv
    asyncio.run(tsumugi_worker(Path(state), int(jobs), policy, Path(done), enqueue == "1"))


# ------------------------------------------------------------------ Huey


def huey_drain(jobs: int, enqueue: bool = False, quiet: bool = False) -> Drain:
    import tempfile  # the parent's tool only

    consumer = Path(sys.executable).with_name("huey_consumer")
    with tempfile.TemporaryDirectory(prefix="peers-huey-") as tmp:
        (Path(tmp) / "peer_huey_app.py").write_text(HUEY_APP)
        done = Path(tmp) / "done"
        env = {**os.environ, "PEER_DB": f"{tmp}/huey.db", "PEER_N": str(jobs), "PEER_DONE": str(done)}
        env["PYTHONPATH"] = tmp
        producer = [sys.executable, "-c", f"import peer_huey_app as a\nfor n in range({jobs}): a.noop(n)"]
        if not enqueue:
            subprocess.run(producer, env=env, cwd=tmp, check=True)
        # As configured for the peers' table: its default logging (a line per task) unless quiet.
        command = [str(consumer), "peer_huey_app.huey", "-k", "thread", "-w", "1", *(["-q"] if quiet else [])]
        return child_drain(command, jobs, done, env=env, cwd=tmp, producer=producer if enqueue else None)


# ------------------------------------------------------------------ shared


def child_drain(
    command: list[str],
    jobs: int,
    done: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    producer: list[str] | None = None,
) -> Drain:
    log = done.with_name("worker.log")
    started = time.time()
    with log.open("w") as output:  # a file, not a pipe: a chatty worker must never block on its output
        child = subprocess.Popen(command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        feeding = subprocess.Popen(producer, env=env, cwd=cwd) if producer is not None else None
        try:
            while not done.exists():
                if child.poll() is not None:
                    raise RuntimeError(f"{command[0]} exited early: {log.read_text()[-2000:]}")
                time.sleep(0.005)  # real time: another process drains; the done file ends the wait
            finished_at, cpu_s = (float(part) for part in done.read_text().split())
        finally:
            child.terminate()
            child.wait(timeout=30)
            if feeding is not None:
                feeding.wait(timeout=60)
    return Drain(jobs / (finished_at - started), cpu_s / jobs * 1e6)


async def latency(jobs: int) -> tuple[float, float]:
    """Enqueue one job at a time on an idle runtime; ms until its shard holds it COMPLETED."""
    import statistics
    import tempfile

    tsumugi = app("default")
    with tempfile.TemporaryDirectory(prefix="peers-latency-") as tmp:
        async with LocalRuntime(tsumugi, Path(tmp), exports={"Noop": Noop}, cron=False) as runtime:
            shard = shard_for(runtime.env, "Noop")
            samples: list[float] = []
            for n in range(jobs):
                started = time.perf_counter()
                job_id = await tsumugi.enqueue(runtime.env, binding="Noop", payload={"n": n})
                while await shard.state_of(job_id) != "COMPLETED":
                    await asyncio.sleep(0.0005)
                samples.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.01)  # idle again before the next one
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def median_drain(trials: list[Drain]) -> Drain:
    import statistics  # the parent's tool only

    return Drain(
        statistics.median(t.jobs_per_s for t in trials), statistics.median(t.cpu_per_job_us for t in trials)
    )


def main() -> None:
    import argparse  # the parent's tool only

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--latency-jobs", type=int, default=200)
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # how a worker started before ``WORKER``: ``bench/ab_drain.py`` runs older revisions
        worker(args.worker)
        return

    compile_package()
    systems: dict[str, Callable[[], Drain]] = {
        "huey": lambda: huey_drain(args.jobs),
        "huey -q (no per-task log lines)": lambda: huey_drain(args.jobs, quiet=True),
        "tsumugi default": lambda: tsumugi_drain(args.jobs, "default"),
        "tsumugi wide": lambda: tsumugi_drain(args.jobs, "wide"),
    }
    feeding: dict[str, Callable[[], Drain]] = {
        "huey": lambda: huey_drain(args.jobs, enqueue=True),
        "tsumugi default": lambda: tsumugi_drain(args.jobs, "default", enqueue=True),
    }
    names = [*systems, *(f"{name}, enqueue while draining" for name in feeding)]
    results: dict[str, list[Drain]] = {name: [] for name in names}
    for trial in range(args.trials):
        for name, run in systems.items():
            results[name].append(run())
        for name, run in feeding.items():
            results[f"{name}, enqueue while draining"].append(run())
        print(f"trial {trial + 1}/{args.trials} done", file=sys.stderr)
    medians = {name: median_drain(trials) for name, trials in results.items()}
    huey = medians["huey"]
    print(f"{args.jobs} no-op jobs, {args.trials} alternating trials, medians:")
    print(f"{'system':<44}{'drain jobs/s':>14}{'CPU µs/job':>12}{'vs huey':>9}")
    for name, drain in medians.items():
        peer = medians["huey, enqueue while draining"] if "while" in name else huey
        ratio = drain.jobs_per_s / peer.jobs_per_s
        print(f"{name:<44}{drain.jobs_per_s:>14,.0f}{drain.cpu_per_job_us:>12,.0f}{ratio:>9.2f}")
    p50, p99 = asyncio.run(latency(args.latency_jobs))
    print(f"latency of one job on an idle runtime (enqueue -> COMPLETED): p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    default = medians["tsumugi default"].jobs_per_s / huey.jobs_per_s
    wide = medians["tsumugi wide"].jobs_per_s / huey.jobs_per_s
    print(f"peers: drain vs huey default={default:.2f} wide={wide:.2f}; latency p50={p50:.1f} ms")


if __name__ == "__main__":
    main()
