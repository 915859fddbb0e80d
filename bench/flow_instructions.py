#!/usr/bin/env python3
"""Machine instructions per node of a fan-out run, and per plain job, counted by valgrind.

The workloads are ``bench/flows_bench.py``'s: a run whose one fan-out node has N no-op children, until
the run is COMPLETED; and N no-op jobs enqueued directly, until all are COMPLETED. Each runs in its own
process under ``valgrind --tool=callgrind`` at N and 3N; the difference over 2N is the cost of one node
(or job), the rest the runtime's start and stop. Like ``bench/drain_instructions.py`` the figures repeat
to within a fraction of a percent, so two versions of the code compare in one run each; they are not time.

Usage: ``.venv/bin/python bench/flow_instructions.py [--nodes 1000]`` (needs valgrind: ``apt-get install
valgrind``; a few minutes at the default size). Nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

import flows_bench
import peers
from drain_instructions import callgrind_count

WORKLOADS = {"run": flows_bench.run_to_completion, "plain": flows_bench.plain_jobs}


def counted(workload: str, nodes: int) -> int:
    """Instructions of one process running ``workload`` over ``nodes`` children or jobs."""
    return callgrind_count([__file__, "--child", workload, str(nodes)])


def per_item(workload: str, nodes: int) -> float:
    low, high = counted(workload, nodes), counted(workload, 3 * nodes)
    return (high - low) / (2 * nodes)


async def child(workload: str, nodes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="flow-instructions-") as root:
        await WORKLOADS[workload](nodes, 1_000, Path(root) / "state")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args.child[0], int(args.child[1])))
        return
    if shutil.which("valgrind") is None:
        sys.exit("flow_instructions: valgrind is not installed (apt-get install valgrind)")
    peers.compile_package()
    run, plain = per_item("run", args.nodes), per_item("plain", args.nodes)
    print(f"instructions: {run / 1000:,.1f}k per run node, {plain / 1000:,.1f}k per plain job")
    print(f"run / plain jobs: {run / plain:.2f}x instructions (target: at most 1.5x in wall time)")


if __name__ == "__main__":
    main()
