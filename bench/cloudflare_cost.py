"""Print what a job costs on Cloudflare: COST.md workloads A, B and C, measured on the real engines.

The engine runs in CPython; every Durable Object statement it issues is replayed on Durable Object
SQLite in Miniflare (cursor rowsRead/rowsWritten), and the read model writes to Miniflare's real D1.
Needs Node and ``npm ci``. Usage: ``.venv/bin/python bench/cloudflare_cost.py [--jobs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from the repository

from tests.platform.cost_report import measure, render
from tests.platform.replay_client import ReplayServer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per workload (COST.md: 1000)")
    parser.add_argument("--statements", type=int, default=12, help="how many costly statements to list")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        print("cloudflare_cost: node is not on PATH", file=sys.stderr)
        return 2
    server = ReplayServer(node)
    try:
        measurement = asyncio.run(measure(server, args.jobs))
    finally:
        server.close()
    print(render(measurement, args.statements))
    report = measurement.report
    print(f"\nDO SQL conformance: {report.identical}/{report.statements} statements identical to CPython")
    return 0 if report.identical == report.statements else 1


if __name__ == "__main__":
    raise SystemExit(main())
