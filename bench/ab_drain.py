#!/usr/bin/env python3
"""The peers' drain of two versions of Tsumugi, side by side in one run: a git revision against this tree.

Each version drains ``bench/peers.py``'s workload its own way (its own ``peers.py``, its own package): N
no-op jobs wait behind a pinned pause, a worker process starts, and the drain is timed from its start
until the last job is COMPLETED. The backlog is built once per version, by that version, and copied
afresh for every trial. Trials alternate (before, after, before, ...), so a change in the machine's load
hits both; medians are printed, with each trial, and the ratio of the medians.

Usage: ``.venv/bin/python bench/ab_drain.py --before cc0ce08 [--policy wide] [--trials 7] [--jobs 20000]``
(the revision must hold ``bench/peers.py`` with its ``--worker`` mode). Nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from peers import child_drain

REPO = Path(__file__).resolve().parents[1]


def export(revision: str, into: Path) -> Path:
    """``revision``'s tree, written out under ``into`` and compiled, as an installed package would be."""
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", revision], stdout=out, check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    compileall.compile_dir(tree / "src" / "tsumugi", quiet=1)
    return tree


def tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree / "src")}


def backlog(tree: Path, state: Path, jobs: int, policy: str) -> None:
    code = (
        "import asyncio, sys; from pathlib import Path; sys.path.insert(0, 'bench'); import peers; "
        f"asyncio.run(peers.tsumugi_backlog(Path({str(state)!r}), {jobs}, {policy!r}))"
    )
    subprocess.run([sys.executable, "-c", code], env=tree_env(tree), cwd=tree, check=True)


def drain(tree: Path, backlog_dir: Path, jobs: int, policy: str) -> float:
    """Seconds from the worker's start until its last job is COMPLETED, timed as ``peers.py`` times it."""
    with tempfile.TemporaryDirectory(prefix="ab-drain-") as tmp:
        state, done = Path(tmp) / "state", Path(tmp) / "done"
        shutil.copytree(backlog_dir, state)
        command = [
            sys.executable,
            "bench/peers.py",
            "--worker",
            str(state),
            str(jobs),
            policy,
            str(done),
            "0",
        ]
        return jobs / child_drain(command, jobs, done, env=tree_env(tree), cwd=str(tree)).jobs_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a git revision to compare this tree against")
    parser.add_argument("--policy", choices=("default", "wide"), default="wide")
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=20_000)
    args = parser.parse_args()
    compileall.compile_dir(REPO / "src" / "tsumugi", quiet=1)
    with tempfile.TemporaryDirectory(prefix="ab-trees-") as tmp:
        trees = {"before": export(args.before, Path(tmp)), "after": REPO}
        backlogs = {name: Path(tmp) / f"backlog-{name}" for name in trees}
        for name, tree in trees.items():
            backlog(tree, backlogs[name], args.jobs, args.policy)
        times: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.trials):
            for name, tree in trees.items():
                times[name].append(drain(tree, backlogs[name], args.jobs, args.policy))
    for name, seconds in times.items():
        label = f"{name} ({args.before})" if name == "before" else f"{name} (this tree)"
        trials = ", ".join(f"{1000 * s:.0f}" for s in seconds)
        print(f"{label:<28} median {1000 * statistics.median(seconds):6.0f} ms   trials: {trials}")
    ratio = statistics.median(times["after"]) / statistics.median(times["before"])
    print(f"ab_drain: {args.jobs} jobs, {args.policy} policy, after / before = {ratio:.3f}")


if __name__ == "__main__":
    main()
