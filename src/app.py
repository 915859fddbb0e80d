"""The example app, defined once: the Worker entry (``src/entry.py``) and ``tsumugi dev`` both import it.

It imports nothing that only exists under Pyodide, so the local runtime can load it on CPython.
Each performer's binding is its class name (J-60).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tsumugi.application import define_tsumugi
from tsumugi.performer import JobContext, Performer

log = logging.getLogger("tsumugi.example")

SLOW_STEP_S = 1.0  # Slow sleeps one second per step, heartbeating after each


class Hello(Performer):
    """Logs a greeting: ``{"name": str}``."""

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        log.info("Hello, %s! (job %s, attempt %d)", payload.get("name", "world"), ctx.job_id, ctx.attempt)


class Boom(Performer):
    """Always fails, to show retries and the FAILED state."""

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        raise Exception("intentional failure")


class Slow(Performer):
    """Works ``steps`` seconds, reporting progress; stops early when cancellation is requested (J-69a)."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, int]:
        steps = max(1, int(payload.get("steps", 5)))
        for step in range(steps):
            await asyncio.sleep(SLOW_STEP_S)
            beat = await ctx.heartbeat((step + 1) / steps)
            if beat.cancel_requested:
                log.info("Slow %s: cancelled after step %d of %d", ctx.job_id, step + 1, steps)
                return {"steps": step + 1}
        return {"steps": steps}


class ListNames(Performer):
    """Returns three names made from ``prefix`` (a flow fans out over them)."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, list[str]]:
        prefix = payload.get("prefix", "name")
        return {"names": [f"{prefix}-{n}" for n in (1, 2, 3)]}


class Greet(Performer):
    """Returns ``{"greeted": name}``."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, Any]:
        return {"greeted": payload.get("name")}


class Report(Performer):
    """Logs a summary: ``{"total": int, "failed": int}``."""

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        log.info("Report: %s of %s failed", payload.get("failed"), payload.get("total"))


tsumugi = define_tsumugi(
    performers={
        "Hello": Hello,
        "Boom": Boom,
        "Slow": Slow,
        "ListNames": ListNames,
        "Greet": Greet,
        "Report": Report,
    },
)


def _refusal(request: Request, env: Any) -> Response | None:
    """Bearer ``TSUMUGI_TOKEN``; with no token configured the routes answer 404 (fail-closed, J-9)."""
    token = getattr(env, "TSUMUGI_TOKEN", None)
    if not token:
        return JSONResponse({"error": "not found"}, status_code=404)
    if request.headers.get("authorization") != f"Bearer {token}":
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    return None


def http_routes(env: Any) -> list[BaseRoute]:
    """The example's own routes: ``POST /hello`` (``{"name"}``) and ``POST /hello/{name}`` enqueue Hello."""

    async def hello(request: Request) -> Response:
        refusal = _refusal(request, env)
        if refusal is not None:
            return refusal
        name = request.path_params.get("name")
        if name is None:
            body = await request.json() if await request.body() else {}
            name = body.get("name", "world") if isinstance(body, dict) else "world"
        job_id = await tsumugi.enqueue(env, binding="Hello", payload={"name": str(name)})
        return JSONResponse({"id": job_id}, status_code=201)  # the shape of POST /api/jobs

    return [Route("/hello", hello, methods=["POST"]), Route("/hello/{name}", hello, methods=["POST"])]
