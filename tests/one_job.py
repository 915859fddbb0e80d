"""A fresh Python that runs one job on a local runtime and then the caller's checks: what a process that
only runs jobs loads, seen where nothing else was imported first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_RUN_ONE_JOB = textwrap.dedent(
    """
    import asyncio, sys
    from tsumugi import JobContext, Performer, define_tsumugi
    from tsumugi.runtimes.local.runtime import LocalRuntime

    class Ping(Performer):
        async def perform(self, payload, ctx: JobContext):
            return {"traceparent": ctx.traceparent}

    async def main() -> None:
        app = define_tsumugi(performers={"Ping": Ping})
        async with LocalRuntime(app, sys.argv[1], exports={"Ping": Ping}, cron=False) as runtime:
            job_id = await app.enqueue(runtime.env, binding="Ping", payload={})
            shard = runtime.env.JOB_SHARD.get(job_id.rsplit(":", 1)[0])
            for _ in range(5000):
                if await shard.state_of(job_id) == "COMPLETED":
                    break
                await asyncio.sleep(0.002)  # the runtime's tasks do the work (noqa: sleep-ok)
            assert await shard.state_of(job_id) == "COMPLETED"

    asyncio.run(main())
    """
)


def run_one_job_then(checks: str, state: Path) -> subprocess.CompletedProcess[str]:
    """Run one job in a child Python with ``state`` as its runtime's directory, then ``checks`` (code)."""
    return subprocess.run(
        [sys.executable, "-c", _RUN_ONE_JOB + textwrap.dedent(checks), str(state)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
