#!/usr/bin/env python3
"""The files one job passes through on the local runtime, from enqueue until the read model lists it done.

A warm-up job runs first, so imports and first-use set-up are not counted. Then a profiler records every
call into a function of ``src/tsumugi`` while one more job is enqueued, dispatched, performed, reported
and projected as COMPLETED. It prints the engine's files in the order the job first reaches them, how
many of its functions ran in each, and the hops: calls that cross from one of those files into another.
The runtime's own plumbing (its alarms, its queue, its HTTP server) is listed apart, since a Durable
Object, a Queue and D1 do that work on Cloudflare.

Usage: ``.venv/bin/python bench/job_path.py [--functions]``; ``--functions`` names the functions run
in each file.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Final

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.runtimes.local.runtime import LocalRuntime

SRC: Final = Path(__file__).resolve().parent.parent / "src" / "tsumugi"
RUNTIME_PLUMBING: Final = SRC / "runtimes" / "local"
DEADLINE_S: Final = 30.0  # the first projection of a new job waits about a second; this is far above it
POLL_S: Final = 0.02


class Noop(Performer):
    async def perform(self, payload: object, ctx: JobContext) -> None:
        return None


def _listed_completed(state: Path, job_id: str) -> bool:
    """Whether the read model (the local D1 file) lists the job as COMPLETED; read outside the engine."""
    database = state / "read_model.sqlite3"
    if not database.exists():
        return False
    with contextlib.closing(sqlite3.connect(database, timeout=5)) as db:
        try:
            row = db.execute("SELECT state FROM job WHERE id = ?", (job_id,)).fetchone()
        except sqlite3.OperationalError:
            return False
    return row is not None and row[0] == "COMPLETED"


class PathRecorder:
    """Files of ``src/tsumugi`` in first-touch order, functions run per file, and cross-file call edges."""

    def __init__(self) -> None:
        self.files: dict[Path, set[str]] = {}
        self.hops: Counter[tuple[Path, Path]] = Counter()

    def __call__(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(SRC):
            return
        self.files.setdefault(path, set()).add(frame.f_code.co_qualname)
        caller = frame.f_back
        while caller is not None and not Path(caller.f_code.co_filename).is_relative_to(SRC):
            caller = caller.f_back  # through the standard library (asyncio, sqlite3) to engine code
        if caller is not None and Path(caller.f_code.co_filename) != path:
            self.hops[(Path(caller.f_code.co_filename), path)] += 1


async def _walk(state: Path) -> PathRecorder:
    tsumugi = define_tsumugi(performers={"Noop": Noop})
    async with LocalRuntime(tsumugi, state, exports={"Noop": Noop}, cron=False) as runtime:
        for trial in ("warm-up", "traced"):
            recorder = PathRecorder()
            if trial == "traced":
                sys.setprofile(recorder)
            job_id = await tsumugi.enqueue(runtime.env, binding="Noop", payload={"trial": trial})
            deadline = time.monotonic() + DEADLINE_S
            while not _listed_completed(state, job_id):
                if time.monotonic() > deadline:
                    raise SystemExit(f"job {job_id} was not listed COMPLETED within {DEADLINE_S:.0f} s")
                await asyncio.sleep(POLL_S)
            sys.setprofile(None)
    return recorder


def _name(path: Path) -> str:
    return str(path.relative_to(SRC.parent))


def main() -> None:
    show_functions = "--functions" in sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="job-path-") as tmp:
        recorder = asyncio.run(_walk(Path(tmp)))
    engine = [path for path in recorder.files if not path.is_relative_to(RUNTIME_PLUMBING)]
    plumbing = [path for path in recorder.files if path.is_relative_to(RUNTIME_PLUMBING)]
    engine_hops = {edge for edge in recorder.hops if edge[0] in engine and edge[1] in engine}
    print(f"one job, enqueued to listed COMPLETED: {len(engine)} engine files, {len(engine_hops)} hops")
    for n, path in enumerate(engine, 1):
        print(f"{n:4d}  {_name(path):60s} {len(recorder.files[path]):3d} functions")
        if show_functions:
            print("        " + ", ".join(sorted(recorder.files[path])))
    print(f"and {len(plumbing)} files of the local runtime's plumbing (alarms, queue, SQLite, server):")
    for path in plumbing:
        print(f"      {_name(path):60s} {len(recorder.files[path]):3d} functions")


if __name__ == "__main__":
    main()
