"""The example app, defined once: the Worker entry (``src/entry.py``) and ``tsumugi dev`` both import it.

It imports nothing that only exists under Pyodide, so the local runtime can load it on CPython.
Each performer's binding is its class name. Flows: ``GREETINGS`` lists names, greets each and
reports; ``PIPELINE`` runs ``GREETINGS`` as a subflow, then a summary; ``TIMED`` lists names within
ten minutes; ``NAPPING`` sleeps first and ``APPROVAL`` waits for an event. Schedules poll ``ListNames``,
ping ``Hello`` and start ``GREETINGS`` nightly.
The REST API and dashboard answer with the bearer token ``TSUMUGI_TOKEN`` (header or cookie).

The performers are untyped: ``payload: Any`` declares no payload type, so payloads are not checked at
enqueue and ``perform`` gets the stored JSON (ADR-0140). Declare ``Performer[MailIn, None]`` (a dataclass
or TypedDict) to have them checked.
"""
# J-60

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tsumugi import (
    FlowBuilder,
    JobContext,
    Performer,
    ScheduleContext,
    bearer_auth,
    create_flow,
    define_tsumugi,
    remote,
)

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


class SlowCancelled(Exception):
    """Raised by Slow to stop once cancellation is requested; the job then ends CANCELLED."""

    # J-135


class Slow(Performer):
    """Works ``steps`` seconds, reporting progress; stops early when cancellation is requested."""

    # J-69a

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, int]:
        steps = max(1, int(payload.get("steps", 5)))
        for step in range(steps):
            await asyncio.sleep(SLOW_STEP_S)
            beat = await ctx.heartbeat((step + 1) / steps)
            if beat.cancel_requested:
                log.info("Slow %s: cancelled after step %d of %d", ctx.job_id, step + 1, steps)
                # seed page: to abort, raise; a failure after the request is not retried -> CANCELLED
                raise SlowCancelled(f"cancelled after step {step + 1} of {steps}")
        return {"steps": steps}


class ListNames(Performer):
    """Returns three names made from ``prefix`` (a flow fans out over them)."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, list[str]]:
        prefix = payload.get("prefix", "name")
        return {"names": [f"{prefix}-{n}" for n in (1, 2, 3)]}


class Greet(Performer):
    """Returns ``{"greeted": name}``."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, object]:
        return {"greeted": payload.get("name")}


class Report(Performer):
    """Logs a summary: ``{"total": int, "failed": int}``."""

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        log.info("Report: %s of %s failed", payload.get("failed"), payload.get("total"))


class Tally(Performer):
    """Returns ``{"sum": n}`` for ``{"values": [numbers]}``. Its jobs are split over two shards by key."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, float]:
        return {"sum": sum(float(value) for value in payload.get("values", []))}


class Shout(Performer):
    """Returns ``{"shouted": TEXT}`` for ``{"text": str}``; beats once, so progress crosses back too.

    A remote performer: on Cloudflare the companion Worker (``src/companion.py``) serves it and this
    Worker reaches it through the ``Shout`` service binding; ``tsumugi dev`` performs it in process.
    """

    # J-62

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, str | bool]:
        beat = await ctx.heartbeat(0.5)
        return {"shouted": str(payload.get("text", "")).upper(), "cancelRequested": beat.cancel_requested}


PERFORMERS = {
    "Hello": Hello,
    "Boom": Boom,
    "Slow": Slow,
    "ListNames": ListNames,
    "Greet": Greet,
    "Report": Report,
    "Tally": Tally,
    "Shout": remote(Shout),
}
# Tally jobs spread over two shards (J-17..J-19): every enqueue names a partition_key, which picks one.
BINDINGS = {"Tally": {"shards": 2}}
TIMED_DEADLINE_MS = 600_000  # TIMED fails if it is not done within ten minutes (F-73)

flow = create_flow(PERFORMERS)


@flow
def GREETINGS(f: FlowBuilder) -> None:
    """``{prefix}``: list names, greet each one (fan-out), report how many greetings failed."""
    names = f.node("list", "ListNames", input=lambda i, d: {"prefix": i["prefix"]})
    greet = f.fan_out(
        "greet",
        "Greet",
        after={"list": names},
        over=lambda i, d: d["list"]["names"],
        input=lambda name, i, index: {"name": name},
    )
    f.node(
        "report",
        "Report",
        after={"greet": greet},
        input=lambda i, d: {"total": d["greet"]["total"], "failed": d["greet"]["failed"]},
    )


@flow
def PIPELINE(f: FlowBuilder) -> None:
    """``{prefix}``: GREETINGS as a child run, then a summary once it completed."""
    # F-16, F-63
    greetings = f.subflow("greetings", GREETINGS, input=lambda i, d: {"prefix": i["prefix"]})
    f.node("summary", "Report", after={"greetings": greetings}, input=lambda i, d: {"total": 1, "failed": 0})


@flow(deadline_ms=TIMED_DEADLINE_MS)
def TIMED(f: FlowBuilder) -> None:
    """``{prefix}``: one ListNames node under a ten-minute run deadline."""
    f.node("list", "ListNames", input=lambda i, d: {"prefix": i.get("prefix", "timed")})


@flow
def NAPPING(f: FlowBuilder) -> None:
    """``{prefix}``: sleep a second without holding a job (ADR-0147), then list names."""
    nap = f.sleep("nap", ms=1_000)
    f.node("list", "ListNames", after={"nap": nap}, input=lambda i, d: {"prefix": i["prefix"]})


@flow
def APPROVAL(f: FlowBuilder) -> None:
    """Waits for the event ``approved`` (ADR-0148); its payload's ``prefix`` names the list."""
    approval = f.wait_for_event("approval", event="approved", timeout_ms=TIMED_DEADLINE_MS)
    f.node("list", "ListNames", after={"ok": approval}, input=lambda i, d: {"prefix": d["ok"]["prefix"]})


def _ping(context: ScheduleContext) -> dict[str, str]:
    return {"name": f"ping-{context.scheduled_at}"}  # S-4: the occurrence, not the firing time


def _token(env: object) -> str | None:
    """The bearer token: the Worker's ``TSUMUGI_TOKEN`` secret, or ``.dev.vars`` under ``tsumugi dev``."""
    token = env.get("TSUMUGI_TOKEN") if isinstance(env, Mapping) else getattr(env, "TSUMUGI_TOKEN", None)
    return token if isinstance(token, str) else None


tsumugi = define_tsumugi(
    performers=PERFORMERS,
    bindings=BINDINGS,
    flows={
        "GREETINGS": GREETINGS,
        "PIPELINE": PIPELINE,
        "TIMED": TIMED,
        "NAPPING": NAPPING,
        "APPROVAL": APPROVAL,
    },
    schedules={
        "poll-names": {"binding": "ListNames", "every_ms": 300_000, "payload": {"prefix": "poll"}},
        "ping-hello": {"binding": "Hello", "every_ms": 60_000, "payload": _ping, "overlap": "overlap"},
        "nightly": {"flow": "GREETINGS", "cron": "0 3 * * *", "input": {"prefix": "nightly"}},
    },
    auth=bearer_auth(_token, cookie="tsumugi_token"),  # the dashboard keeps the token in that cookie
)


def _refusal(request: Request, env: object) -> Response | None:
    """Bearer ``TSUMUGI_TOKEN``; with no token configured the routes answer 404 (fail-closed)."""
    # J-9
    token = _token(env)
    if not token:
        return JSONResponse({"error": "not found"}, status_code=404)
    if request.headers.get("authorization") != f"Bearer {token}":
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    return None


async def _body_field(request: Request, name: str, default: str) -> str:
    body = await request.json() if await request.body() else {}
    return str(body.get(name, default)) if isinstance(body, dict) else default


def http_routes(env: object) -> list[BaseRoute]:
    """The example's own routes: ``POST /hello[/{name}]`` enqueue Hello, ``POST /greetings[/{prefix}]``
    starts a GREETINGS run; each answers 201 ``{"id"}`` like ``POST /api/jobs`` and ``/api/runs``."""

    async def hello(request: Request) -> Response:
        refusal = _refusal(request, env)
        if refusal is not None:
            return refusal
        name = request.path_params.get("name") or await _body_field(request, "name", "world")
        job_id = await tsumugi.enqueue(env, binding="Hello", payload={"name": str(name)})
        return JSONResponse({"id": job_id}, status_code=201)

    async def greetings(request: Request) -> Response:
        refusal = _refusal(request, env)
        if refusal is not None:
            return refusal
        prefix = request.path_params.get("prefix") or await _body_field(request, "prefix", "guest")
        run_id = await tsumugi.start(env, "GREETINGS", {"prefix": str(prefix)})
        return JSONResponse({"id": run_id}, status_code=201)  # F-22

    return [
        Route("/hello", hello, methods=["POST"]),
        Route("/hello/{name}", hello, methods=["POST"]),
        Route("/greetings", greetings, methods=["POST"]),
        Route("/greetings/{prefix}", greetings, methods=["POST"]),
    ]
