#!/usr/bin/env python3
"""Machine instructions per drained job on the local runtime, counted by valgrind: a figure that repeats.

Wall-clock figures on a shared 2-core machine move by 10-20% from one run to the next, more than most
single changes to the engine; an A/B comparison by time needs many alternating trials. Instructions
executed repeat to within a tenth of a percent, whatever else the machine is doing, so they compare two
versions of the code in two runs (they are not time: a cache miss costs more than an add).

The workload is ``bench/peers.py``'s: N no-op jobs wait behind a pinned pause; a worker process starts,
lifts the pause and drains them. The worker runs under ``valgrind --tool=callgrind`` twice, at N and 3N
jobs; the difference over 2N is the cost of one job, the rest the worker's start and stop.

Usage: ``.venv/bin/python bench/drain_instructions.py [--jobs 2000] [--policy default|wide]``
(needs valgrind: ``apt-get install valgrind``; about a minute at the default size). Nothing here asserts
a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import peers


def callgrind_count(args: list[str]) -> int:
    """Instructions a Python process running ``args`` executes, with its children (the runtime's read
    model writer, ADR-0170), counted by valgrind's callgrind."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--trace-children=yes",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        *args,
    ]
    finished = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.findall(r"Collected : (\d+)", finished.stderr)
    if not found:
        raise RuntimeError(f"valgrind printed no count: {finished.stderr[-2000:]}")
    return sum(int(count) for count in found)


def counted(jobs: int, policy: str) -> int:
    """Instructions of one worker process draining ``jobs`` waiting jobs."""
    with tempfile.TemporaryDirectory(prefix="drain-instructions-") as tmp:
        state = Path(tmp) / "state"
        asyncio.run(peers.tsumugi_backlog(state, jobs, policy))  # behind a pause, as in the peers
        return callgrind_count([__file__, "--worker", str(state), str(jobs), policy, str(Path(tmp) / "done")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--policy", choices=("default", "wide"), default="default")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        state, jobs, policy, done = args.worker  # the peers' worker: it lifts the pause and drains
        asyncio.run(peers.tsumugi_worker(Path(state), int(jobs), policy, Path(done), enqueue=False))
        return
    if shutil.which("valgrind") is None:
        sys.exit("drain_instructions: valgrind is not installed (apt-get install valgrind)")
    peers.compile_package()
    small, large = args.jobs, 3 * args.jobs
    low, high = counted(small, args.policy), counted(large, args.policy)
    per_job = (high - low) / (large - small)
    fixed = low - per_job * small
    print(f"{args.policy} policy: {low:,} instructions at {small} jobs, {high:,} at {large}")
    print(f"instructions: {per_job / 1000:,.1f}k per job; start and stop {fixed / 1e6:,.0f}M")


if __name__ == "__main__":
    main()
