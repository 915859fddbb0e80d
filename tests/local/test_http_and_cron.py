"""The local HTTP surface (health, app routes, Tsumugi's own ASGI app) and the local cron trigger."""

from __future__ import annotations

import types
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.app_loader import LoadedApp
from tsumugi.runtimes.local.cron_trigger import CRON, CRON_INTERVAL_MS, CronTrigger
from tsumugi.runtimes.local.http_app import build_http_app
from tsumugi.runtimes.local.local_env import LocalEnv


class TsumugiWithApi:
    async def queue(self, batch: Any, env: Any, ctx: Any = None) -> None: ...

    async def enqueue(self, env: Any, **kwargs: Any) -> str:
        return "X#0:x"

    def asgi(self, env: Any) -> Starlette:
        async def jobs(request: Request) -> JSONResponse:
            return JSONResponse({"token": env.TSUMUGI_TOKEN})

        return Starlette(routes=[Route("/api/jobs", jobs)])


def _loaded(tsumugi: Any, with_routes: bool) -> LoadedApp:
    module = types.ModuleType("fake_app")
    if with_routes:

        def http_routes(env: Any) -> list[Route]:
            async def hello(request: Request) -> PlainTextResponse:
                return PlainTextResponse("hi")

            return [Route("/hello", hello)]

        module.http_routes = http_routes  # type: ignore[attr-defined]
    return LoadedApp("fake_app", module, tsumugi)


async def test_health_app_routes_and_the_tsumugi_api_are_served_together() -> None:
    env = LocalEnv({"TSUMUGI_TOKEN": "t"})
    app = build_http_app(_loaded(TsumugiWithApi(), with_routes=True), env)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://dev") as client:
        assert (await client.get("/healthz")).json() == {"ok": True, "app": "fake_app"}
        assert (await client.get("/hello")).text == "hi"
        assert (await client.get("/api/jobs")).json() == {"token": "t"}  # mounted with the runtime's env


async def test_without_an_api_only_health_and_app_routes_exist() -> None:
    class Bare:
        async def queue(self, batch: Any, env: Any, ctx: Any = None) -> None: ...

        async def enqueue(self, env: Any, **kwargs: Any) -> str:
            return "X#0:x"

    app = build_http_app(_loaded(Bare(), with_routes=False), LocalEnv({}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://dev") as client:
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/api/jobs")).status_code == 404


async def test_the_cron_trigger_fires_on_five_minute_boundaries() -> None:
    # J-207: the scheduled handler (the read-model sweep) runs on the Worker's cron trigger
    clock = FixedClock(1_700_000_000_000)
    calls: list[tuple[int, str]] = []

    async def handler(controller: Any) -> None:
        calls.append((controller.scheduledTime, controller.cron))
        if len(calls) == 2:
            raise RuntimeError("a failing cron run is logged, not raised")

    trigger = CronTrigger(handler, clock)
    at = trigger.next_fire_at(clock.now())
    assert at % CRON_INTERVAL_MS == 0 and 0 < at - clock.now() <= CRON_INTERVAL_MS
    await trigger.fire(at)
    await trigger.fire(at + CRON_INTERVAL_MS)
    assert calls == [(at, CRON), (at + CRON_INTERVAL_MS, CRON)]
