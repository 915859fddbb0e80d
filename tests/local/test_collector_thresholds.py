"""The first local runtime of a process raises the collector's first threshold, unless the process set
its own (ADR-0180). Each case runs in a process of its own: the thresholds are the whole process's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROBE = textwrap.dedent(
    """
    import asyncio, gc, sys
    from tsumugi.application import define_tsumugi
    from tsumugi.performer import Performer
    from tsumugi.runtimes.local.runtime import LocalRuntime

    class Noop(Performer):
        async def perform(self, payload, ctx):
            return None

    if sys.argv[2] != "-":
        gc.set_threshold(*map(int, sys.argv[2].split(",")))
    before = gc.get_threshold()

    async def main():
        app = define_tsumugi(performers={"Noop": Noop})
        async with LocalRuntime(app, sys.argv[1], exports={"Noop": Noop}, cron=False) as runtime:
            job_id = await app.enqueue(runtime.env, binding="Noop", payload={})
            print(before, gc.get_threshold(), bool(job_id))

    asyncio.run(main())
    """
)


def _thresholds(state: Path, set_first: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(state), set_first], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("default", ["700,10,10", "2000,10,10"])  # CPython 3.11-3.12, and 3.13
def test_a_process_at_the_interpreters_defaults_collects_after_ten_thousand(
    tmp_path: Path, default: str
) -> None:
    before = tuple(int(n) for n in default.split(","))
    assert _thresholds(tmp_path, default) == f"{before} (10000, 10, 10) True"


def test_the_interpreters_own_default_is_raised_too(tmp_path: Path) -> None:
    printed = _thresholds(tmp_path, "-")
    assert printed.endswith("(10000, 10, 10) True")


def test_thresholds_the_process_set_itself_are_kept(tmp_path: Path) -> None:
    assert _thresholds(tmp_path, "500,5,5") == "(500, 5, 5) (500, 5, 5) True"
