#!/usr/bin/env python3
"""What settled flow runs cost the local runtime, and what a restart over them costs (ADR-0132), printed.

1. settle: N one-node runs started in waves and waited for until COMPLETED; at ten checkpoints, the open
   fds, the RSS and the run files still open in this process;
2. restart in process: ``LocalRuntime.start`` over the N runs until a REST ``GET /api/runs`` answers, and
   the fds and RSS afterwards;
3. restart of ``tsumugi dev`` (this file is its app) under ``ulimit -n 1024``: seconds from the spawn until
   ``GET /api/runs`` answers, and the child's fds and RSS then.

Runs are kept a day (``sweep_after_ms``), so every one stays settled with its sweep alarm on disk: the
restart loads N persisted alarms. Nothing is asserted; ``tests/local/test_run_resources.py`` asserts.

Usage: ``.venv/bin/python bench/run_resources.py [--runs 100000] [--wave 100] [--state-dir DIR]``
(an existing ``--state-dir`` with ``--reuse`` skips step 1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

TOKEN = "bench-token"
DAY_MS = 86_400_000
OPEN_FILE_LIMIT = 1_024
ANSWER_DEADLINE_S = 300.0  # only so that a server which never answers ends the bench
POLL_S = 0.01


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"Noop": Noop}
flow = create_flow(PERFORMERS)


@flow
def ONE(f: FlowBuilder) -> None:
    f.node("only", "Noop", input=lambda i, d: {})


tsumugi = define_tsumugi(
    performers=PERFORMERS,
    flows={"ONE": ONE},
    runs={"sweep_after_ms": DAY_MS},  # settled, not swept, for the whole bench
    auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
)


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB"


def _run_files_open(runs_dir: Path) -> int:
    prefix = f"{runs_dir.resolve()}{os.sep}"
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            held += os.readlink(f"/proc/self/fd/{fd}").startswith(prefix)
        except OSError:
            continue
    return held


async def _completed(client: httpx.AsyncClient) -> int:
    answer = await client.get("/api/runs", params={"state": "COMPLETED", "limit": 1})
    return int(answer.json()["total"])


async def settle(state_dir: Path, runs: int, wave: int) -> None:
    me = psutil.Process()
    runtime = LocalRuntime(tsumugi, state_dir, exports=PERFORMERS, vars={"TSUMUGI_TOKEN": TOKEN}, cron=False)
    transport = httpx.ASGITransport(app=None)  # replaced below, once the runtime has its env
    async with runtime:
        transport = httpx.ASGITransport(app=tsumugi.asgi(runtime.env))
        headers = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://local", headers=headers) as client:
            print(f"1. settle {runs:,} one-node runs, {wave} at a time")
            print(f"   {'runs':>8} {'seconds':>8} {'fds':>6} {'RSS':>9} {'run fds':>8}")
            started, step = time.perf_counter(), max(wave, runs // 10)
            print(f"   {0:>8,} {0:>8.1f} {me.num_fds():>6} {_mib(me.memory_info().rss):>9} {0:>8}")
            for offset in range(0, runs, wave):
                count = min(wave, runs - offset)
                for n in range(offset, offset + count):
                    await tsumugi.start(runtime.env, "ONE", {}, id=f"r{n}")
                while await _completed(client) < offset + count:
                    await asyncio.sleep(POLL_S)
                done = offset + count
                if done % step == 0 or done == runs:
                    rss = me.memory_info().rss
                    seconds = time.perf_counter() - started
                    held = _run_files_open(state_dir / "runs")
                    print(f"   {done:>8,} {seconds:>8.1f} {me.num_fds():>6} {_mib(rss):>9} {held:>8}")


async def restart_in_process(state_dir: Path) -> None:
    me = psutil.Process()
    started = time.perf_counter()
    runtime = LocalRuntime(tsumugi, state_dir, exports=PERFORMERS, vars={"TSUMUGI_TOKEN": TOKEN}, cron=False)
    async with runtime:
        transport = httpx.ASGITransport(app=tsumugi.asgi(runtime.env))
        headers = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://local", headers=headers) as client:
            total = (await client.get("/api/runs", params={"limit": 1})).json()["total"]
            seconds = time.perf_counter() - started
            await asyncio.sleep(1)  # let start-up ticks (there should be none) open what they open
            print(f"2. restart in process: GET /api/runs answered after {seconds:.2f} s ({total:,} runs)")
            print(f"   a second later: {me.num_fds()} fds, RSS {_mib(me.memory_info().rss)}, ", end="")
            open_count = getattr(runtime.env.RUN.coordinators, "open_count", None)  # absent before ADR-0132
            runs_open = open_count() if callable(open_count) else "?"
            print(f"{runs_open} runs open, {len(runtime.alarms.pending()):,} alarms")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def restart_dev(state_dir: Path) -> None:
    """``tsumugi dev`` on this file under a soft open-file limit of 1,024."""
    port = _free_port()
    launcher = (
        "import resource, runpy, sys\n"
        "_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({OPEN_FILE_LIMIT}, hard))\n"
        "sys.argv = ['tsumugi', *sys.argv[1:]]\n"
        "runpy.run_module('tsumugi.cli.main', run_name='__main__')\n"
    )
    args = ["dev", __file__, "--port", str(port), "--state-dir", str(state_dir)]
    log = state_dir.parent / "dev.log"
    with log.open("w") as sink:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", launcher, *args],
            env={**os.environ, "TSUMUGI_TOKEN": TOKEN},
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        url, headers = f"http://127.0.0.1:{port}/api/runs", {"authorization": f"Bearer {TOKEN}"}
        while True:
            if child.poll() is not None or time.perf_counter() - started > ANSWER_DEADLINE_S:
                print(f"3. tsumugi dev under ulimit -n {OPEN_FILE_LIMIT}: NO ANSWER (see {log})")
                return
            try:
                answer = httpx.get(url, params={"limit": 1}, headers=headers, timeout=1)
                if answer.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(POLL_S)
        seconds = time.perf_counter() - started
        process = psutil.Process(child.pid)
        total = answer.json()["total"]
        print(
            f"3. tsumugi dev under ulimit -n {OPEN_FILE_LIMIT}: GET /api/runs answered {seconds:.2f} s ",
            end="",
        )
        rss = process.memory_info().rss
        print(f"after the spawn ({total:,} runs); {process.num_fds()} fds, RSS {_mib(rss)}")
    finally:
        child.terminate()
        child.wait(timeout=60)
    errors = log.read_text().count("Too many open files")
    print(f"   exit code {child.returncode}, 'Too many open files' logged {errors} times")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--wave", type=int, default=100, help="runs started before waiting for them")
    parser.add_argument("--state-dir", type=Path, help="default: a new temporary directory")
    parser.add_argument("--reuse", action="store_true", help="the state dir holds settled runs already")
    options = parser.parse_args()
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < OPEN_FILE_LIMIT:
        raise SystemExit(f"the hard open-file limit is below {OPEN_FILE_LIMIT}")
    state_dir = options.state_dir or Path(tempfile.mkdtemp(prefix="tsumugi-runs-")) / "state"
    print(f"state directory: {state_dir}")
    if not options.reuse:
        asyncio.run(settle(state_dir, options.runs, options.wave))
    asyncio.run(restart_in_process(state_dir))
    restart_dev(state_dir)


if __name__ == "__main__":
    main()
