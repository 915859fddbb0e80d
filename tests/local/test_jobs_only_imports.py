"""A process that only runs jobs never loads what runs and schedules need (ADR-0176): a worker starts
faster, and an app that defines neither pays nothing for them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

RUN_A_JOB = textwrap.dedent(
    """
    import asyncio, sys
    from tsumugi import JobContext, Performer, define_tsumugi
    from tsumugi.runtimes.local.runtime import LocalRuntime

    class Ping(Performer):
        async def perform(self, payload, ctx: JobContext):
            return {"pong": payload["n"]}

    async def main() -> None:
        app = define_tsumugi(performers={"Ping": Ping})
        async with LocalRuntime(app, sys.argv[1], exports={"Ping": Ping}, cron=False) as runtime:
            job_id = await app.enqueue(runtime.env, binding="Ping", payload={"n": 1})
            shard = runtime.env.JOB_SHARD.get(job_id.rsplit(":", 1)[0])
            for _ in range(5000):
                if await shard.state_of(job_id) == "COMPLETED":
                    break
                await asyncio.sleep(0.002)  # the runtime's tasks do the work (noqa: sleep-ok)
            assert await shard.state_of(job_id) == "COMPLETED"

    asyncio.run(main())
    unwanted = (
        "tsumugi.coordinator.run_context",
        "tsumugi.coordinator.scheduler_context",
        "tsumugi.storage.run_store",
        "tsumugi.storage.run_outbox",
        "tsumugi.storage.schedule_store",
        "tsumugi.core.schedules",
        "tsumugi.core.cron",
    )
    print(",".join(name for name in unwanted if name in sys.modules))
    """
)


def test_running_plain_jobs_loads_no_run_or_schedule_modules(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_A_JOB, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
