#!/usr/bin/env python3
"""Where one job's time goes on the local runtime: µs and SQL statements per job, stage by stage.

N no-op jobs are enqueued into a paused binding, then the pause is lifted and the runtime drains them,
all in this process. The engine's entry points are wrapped (for this process only) with timers that
charge each stage its own CPU time, nested stages excluded, and count the SQL statements it runs:

    enqueue   JobShard.enqueue_many            project   the projection: the tick's step, and clearing
    dispatch  the tick's reading and deciding            what the writer process projected (ADR-0171)
    send      the tick's sendBatch (and a      tick      the rest of the alarm tick
              handoff to the consumer)         lease     the consumer's lease of a batch
    report    JobShard.report_many             ack       settling the batch in the queue

``consume`` is what remains of the runtime's process's CPU time: the consumer, the performers, the event
loop and this bench's polling. The read model's writer process (ADR-0170) runs on another core; its CPU
time is shown apart. ``statements`` counts ``execute`` and ``execute_many`` calls on the SQLite
connections of this process (one ``execute_many`` counts once) and each statement of a read-model batch.

With ``--statements N`` it also times every SQL statement this process runs (transaction control
included, as ``BEGIN IMMEDIATE`` and ``COMMIT``) and prints the N costliest, grouped by their file and
text, in µs per job: where a stage's SQLite time goes.

Usage: ``.venv/bin/python bench/job_stages.py [--jobs 20000] [--policy default|wide] [--statements 15]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import functools
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers

from tsumugi.client import shard_for
from tsumugi.coordinator import job_shard, shard_projection, shard_tick
from tsumugi.runtimes.local import dispatch_queue, read_model_process, sql_database, sqlite_executor
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.storage import projection_outbox

# Stages timed by wrappers: their CPU time (this thread) while they run, less the stages nested in
# them (per task: a context variable). None waits on another task; the consumer does (for its reports),
# so its time, the performers' and the loop's is what remains of the process's CPU time.
STAGES: Final = ("enqueue", "dispatch", "send", "project", "tick", "lease", "report", "ack")
# (stage, the task that entered it): a task created inside a stage inherits the variable, not the stage.
current: contextvars.ContextVar[tuple[str, object]] = contextvars.ContextVar(
    "stage", default=("consume", None)
)
spent: dict[str, float] = defaultdict(float)
statements: dict[str, int] = defaultdict(int)
# --statements: (file, statement) -> [calls, seconds]; an ``execute_many`` counts once.
by_statement: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])


def _task() -> object:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _staged(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def enter() -> tuple[contextvars.Token[tuple[str, object]], float]:
        return current.set((stage, _task())), time.thread_time()

    def leave(token: contextvars.Token[tuple[str, object]], started: float) -> None:
        elapsed = time.thread_time() - started
        current.reset(token)
        spent[stage] += elapsed
        outer, owner = current.get()
        if owner is _task():
            spent[outer] -= elapsed  # the enclosing stage, in this task, does not count it

    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def staged_async(*args: Any, **kwargs: Any) -> Any:
            token, started = enter()
            try:
                return await fn(*args, **kwargs)
            finally:
                leave(token, started)

        return staged_async

    @functools.wraps(fn)
    def staged(*args: Any, **kwargs: Any) -> Any:
        token, started = enter()
        try:
            return fn(*args, **kwargs)
        finally:
            leave(token, started)

    return staged


def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(executor, sql, ...)`` timed under its file's name and its statement's text."""

    def run(self: Any, sql: str, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(self, sql, *args)
        finally:
            entry = by_statement[(Path(self.path).name, " ".join(sql.split()))]
            entry[0] += 1
            entry[1] += time.perf_counter() - started

    return run


def instrument(*, timed_statements: bool = False) -> None:
    def counted(fn: Callable[..., Any]) -> Callable[..., Any]:
        def count(*args: Any, **kwargs: Any) -> Any:
            statements[current.get()[0]] += 1
            return fn(*args, **kwargs)

        return count

    def counted_batch(fn: Callable[..., Any]) -> Callable[..., Any]:
        async def count(self: Any, batch: Any) -> Any:
            statements[current.get()[0]] += len(batch)
            return await fn(self, batch)

        return count

    executor = sqlite_executor.SqliteExecutor
    if timed_statements:
        executor._run = timed(executor._run)  # type: ignore[method-assign]
        executor.execute_many = timed(executor.execute_many)  # type: ignore[method-assign]
    executor.execute = counted(executor.execute)  # type: ignore[method-assign]
    executor.execute_many = counted(executor.execute_many)  # type: ignore[method-assign]
    database = sql_database.SqliteDatabase
    database.batch = counted_batch(database.batch)  # type: ignore[method-assign]
    for owner, name, stage in (
        (job_shard.JobShard, "enqueue_many", "enqueue"),
        (job_shard.JobShard, "_tick", "tick"),
        (job_shard, "plan_tick", "dispatch"),
        (shard_tick, "send", "send"),
        (shard_projection, "project", "project"),
        (projection_outbox.ProjectionOutbox, "clear_projected", "project"),
        (dispatch_queue.DurableQueue, "lease", "lease"),
        (job_shard.JobShard, "report_many", "report"),
        (dispatch_queue.DurableQueue, "settle", "ack"),
        # the writer process's pipe: the requests, and its answers as they come back
        (read_model_process.WriterProcess, "_send", "project"),
        (read_model_process._Answers, "data_received", "project"),
    ):
        setattr(owner, name, _staged(stage, getattr(owner, name)))


async def drain(jobs: int, policy: str, *, timed_statements: bool = False) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU seconds and its children's, from the start until the last job is
    COMPLETED."""
    tsumugi = peers.app(policy)
    with tempfile.TemporaryDirectory(prefix="job-stages-") as tmp:
        state = Path(tmp)
        await peers.tsumugi_backlog(state, jobs, policy)
        statements.clear()
        instrument(timed_statements=timed_statements)
        shard_file = state / "shards" / "Noop%230.sqlite3"
        started, cpu, own = time.perf_counter(), peers.cpu_time(), time.process_time()
        async with LocalRuntime(tsumugi, state, exports={"Noop": peers.Noop}, cron=False) as runtime:
            await shard_for(runtime.env, "Noop").reset_policy(tsumugi.static_settings("Noop"))
            await peers.drained(shard_file, jobs)
            wall, own = time.perf_counter() - started, time.process_time() - own
            children = peers.cpu_time() - cpu - own
        return wall, own, children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--policy", choices=("default", "wide"), default="default")
    parser.add_argument("--statements", type=int, default=0, metavar="N", help="the N costliest statements")
    args = parser.parse_args()
    wall, cpu, children = asyncio.run(drain(args.jobs, args.policy, timed_statements=args.statements > 0))
    per_job = 1e6 / args.jobs
    print(f"{args.jobs} no-op jobs drained at the {args.policy} policy in {wall:.2f} s:")
    print(f"{'stage':<10}{'µs/job':>9}{'statements/job':>16}")
    for stage in STAGES:
        print(f"{stage:<10}{spent[stage] * per_job:>9.1f}{statements[stage] / args.jobs:>16.2f}")
    rest = cpu - sum(spent[stage] for stage in STAGES)
    consume = statements["consume"] / args.jobs
    print(f"{'consume':<10}{rest * per_job:>9.1f}{consume:>16.2f}   (and perform, loop)")
    print(f"{'all (CPU)':<10}{cpu * per_job:>9.1f}{sum(statements.values()) / args.jobs:>16.2f}")
    print(f"{'writer':<10}{children * per_job:>9.1f}{'':>16}   (the read model's writer process, CPU)")
    if args.statements:
        costliest = sorted(by_statement.items(), key=lambda item: -item[1][1])[: args.statements]
        print(f"\nthe {len(costliest)} costliest statements (wall time in the call, timer included):")
        print(f"{'µs/job':>8}{'calls/job':>11}  file: statement")
        for (file, sql), (calls, seconds) in costliest:
            print(f"{seconds * per_job:>8.2f}{calls / args.jobs:>11.3f}  {file}: {sql[:100]}")


if __name__ == "__main__":
    main()
