"""The app the crash test runs under `tsumugi dev` (not a test module; loaded by file path).

``Sleepy`` appends ``start <job_id>`` to the file named by CRASH_LOG each time it begins an attempt, so
the test can count executions across processes. While CRASH_HANG=1 it never finishes (the test kills
the process meanwhile); otherwise it returns at once.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from tsumugi.application import define_tsumugi
from tsumugi.core.wire_format import shard_name_of
from tsumugi.performer import JobContext, Performer

TIMEOUT_MS = 3_000  # the attempt's timeout; the reaper acts TIMEOUT_MS + GRACE_MS after dispatch (J-111)
GRACE_MS = 1_000


class Sleepy(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, str]:
        with open(os.environ["CRASH_LOG"], "a", encoding="utf-8") as log:
            log.write(f"start {ctx.job_id}\n")
        while os.environ.get("CRASH_HANG") == "1":
            await asyncio.sleep(0.05)  # the performer is meant to hang until killed (noqa: sleep-ok)
        return {"done": ctx.job_id}


tsumugi = define_tsumugi(
    performers={"Sleepy": Sleepy},
    bindings={"Sleepy": {"policy": {"reaper_grace_ms": GRACE_MS}}},
)


def http_routes(env: Any) -> list[BaseRoute]:
    async def enqueue(request: Request) -> JSONResponse:
        guarantee = request.path_params["guarantee"]
        job_id = await tsumugi.enqueue(
            env, binding="Sleepy", payload={}, guarantee=guarantee, timeout_ms=TIMEOUT_MS, max_attempts=3
        )
        return JSONResponse({"id": job_id}, status_code=201)

    async def state(request: Request) -> JSONResponse:
        job_id = request.path_params["job_id"]
        value = await env.JOB_SHARD.get(shard_name_of(job_id)).state_of(job_id)
        return JSONResponse({"state": value})

    return [
        Route("/enqueue/{guarantee}", enqueue, methods=["POST"]),
        Route("/state/{job_id:path}", state, methods=["GET"]),
    ]
