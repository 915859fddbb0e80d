"""The app the kill -9 soak runs under `tsumugi dev` (not a test module; loaded by file path).

``Logged`` appends ``<job id> <guarantee>`` to the file named by SOAK_LOG and fsyncs it before it works,
so a log outside the system counts every execution across kills. Then it works for SOAK_WORK_S, so kills
land in attempts that are running.
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

TIMEOUT_MS = 2_000  # the reaper recovers a killed attempt TIMEOUT_MS + GRACE_MS after dispatch (J-111)
GRACE_MS = 1_000
MAX_ATTEMPTS = 50  # each kill that lands in an at-least-once attempt costs one (E7); never run out


class Logged(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        fd = os.open(os.environ["SOAK_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.job_id} {payload['guarantee']}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        work_s = float(os.environ.get("SOAK_WORK_S", "0"))
        await asyncio.sleep(work_s)  # the performer's work, so that kills land in it (noqa: sleep-ok)


tsumugi = define_tsumugi(
    performers={"Logged": Logged},
    bindings={"Logged": {"policy": {"reaper_grace_ms": GRACE_MS}}},
)


def http_routes(env: Any) -> list[BaseRoute]:
    async def enqueue_many(request: Request) -> JSONResponse:
        body = await request.json()
        guarantee = body["guarantee"]
        item = {"binding": "Logged", "payload": {"guarantee": guarantee}, "guarantee": guarantee}
        item.update(timeout_ms=TIMEOUT_MS, max_attempts=MAX_ATTEMPTS)
        job_ids = await tsumugi.enqueue_many(env, [item] * int(body["count"]))
        return JSONResponse({"ids": job_ids}, status_code=201)

    async def states(request: Request) -> JSONResponse:
        job_ids: list[str] = (await request.json())["ids"]
        found = {
            job_id: await env.JOB_SHARD.get(shard_name_of(job_id)).state_of(job_id) for job_id in job_ids
        }
        return JSONResponse({"states": found})

    return [
        Route("/enqueue-many", enqueue_many, methods=["POST"]),
        Route("/states", states, methods=["POST"]),
    ]
