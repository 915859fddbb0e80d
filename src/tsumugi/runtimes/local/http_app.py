"""The local HTTP surface: ``/healthz``, the app's own routes, then whatever ASGI app Tsumugi exposes."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from tsumugi.runtimes.local.app_loader import LoadedApp

# ADR-0054: the Tsumugi object's REST/dashboard app is found by these method names, first match wins,
# so the server switches over to the REST API as soon as the application layer exposes it.
TSUMUGI_ASGI_METHODS = ("asgi", "http_app", "asgi_app")


def tsumugi_asgi(tsumugi: object, env: object) -> ASGIApp | None:
    """The ASGI app the Tsumugi object serves for ``env``, or None if it exposes none."""
    for method in TSUMUGI_ASGI_METHODS:
        factory = getattr(tsumugi, method, None)
        if callable(factory):
            app: ASGIApp = factory(env)
            return app
    return None


def build_http_app(loaded: LoadedApp, env: object) -> Starlette:
    """``/healthz`` first, the app module's ``http_routes(env)`` next, Tsumugi's own app for the rest."""

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "app": loaded.spec})

    routes: list[BaseRoute] = [Route("/healthz", healthz, methods=["GET"])]
    routes.extend(loaded.http_routes(env))
    api = tsumugi_asgi(loaded.tsumugi, env)
    if api is not None:
        routes.append(Mount("/", app=api))
    return Starlette(routes=routes)
