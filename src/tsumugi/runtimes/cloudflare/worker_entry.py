"""The Worker's default export: the fetch, queue and scheduled handlers of a Tsumugi app.

The entry module subclasses ``WorkerHandlers`` and sets ``app`` (the ``define_tsumugi`` result) and,
optionally, ``routes`` (a function of ``env`` returning the app's own Starlette routes, served first).
"""
# J-7, J-207

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount

from tsumugi.core import wire_format
from tsumugi.performer import Performer
from tsumugi.runtimes.cloudflare.js_conversion import IN_PYODIDE, unwrap_sdk
from tsumugi.runtimes.cloudflare.js_objects import JsValue, MessageBatch, RemoteContext
from tsumugi.runtimes.cloudflare.queue_producer import delivered_messages
from tsumugi.runtimes.cloudflare.service_binding import serve_perform
from tsumugi.runtimes.cloudflare.worker_env import WorkerEnv, worker_env_for

if TYPE_CHECKING:
    from tsumugi.application.tsumugi import Tsumugi

JSON_MEDIA_TYPE: Final = "application/json; charset=UTF-8"
# ADR-0084: the Tsumugi object's REST/dashboard ASGI app is found by these method names (the same names
# the local runtime looks for, ADR-0054), each a function of env.
ASGI_FACTORY_METHODS: Final = ("asgi", "http_app", "asgi_app")

AppRoutes = Callable[[WorkerEnv], list[BaseRoute]]


def build_http_app(app: object, env: WorkerEnv, routes: AppRoutes | None) -> Starlette:
    """The app's own routes first, then Tsumugi's REST API and dashboard; 404 when neither matches."""
    served: list[BaseRoute] = list(routes(env)) if routes is not None else []
    for method in ASGI_FACTORY_METHODS:
        factory = getattr(app, method, None)
        if callable(factory):
            served.append(Mount("/", app=factory(env)))
            break

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": "not found"}, status_code=404)

    return Starlette(routes=served, exception_handlers={404: not_found})


# ADR-0084: resolved at run time, like the Durable Object base class; also exported for a Worker's own
# entrypoints (the companion's default). Any: an untyped base class that gives ``self.env``/``self.ctx``.
WorkerEntrypoint: Any = importlib.import_module("workers").WorkerEntrypoint


def _use_webcrypto_for_access() -> None:
    """Cloudflare Access tokens are checked with WebCrypto and the runtime's fetch (ADR-0128)."""
    if IN_PYODIDE:
        from tsumugi.api.auth_access import AccessPlatform, use_access_platform
        from tsumugi.runtimes.cloudflare import access_webcrypto

        use_access_platform(AccessPlatform(access_webcrypto.fetch_jwks, access_webcrypto.verify_rs256))


def json_answer(body: object, status: int = 200) -> object:
    """A ``workers.Response`` holding ``body`` as the REST API prints JSON."""
    workers = importlib.import_module("workers")
    response: object = workers.Response(
        wire_format.dumps(body), status=status, headers={"content-type": JSON_MEDIA_TYPE}
    )
    return response


class WorkerHandlers(WorkerEntrypoint):  # type: ignore[misc]
    """fetch -> ASGI (REST API + dashboard), queue -> the consumer, scheduled -> read-model retention."""

    app: ClassVar[Tsumugi]
    routes: ClassVar[AppRoutes | None] = None

    _http_apps: ClassVar[dict[int, Starlette]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._http_apps = {}

    def _worker_env(self) -> WorkerEnv:
        return worker_env_for(self.env)

    async def fetch(self, request: JsValue, *_runtime_args: object) -> JsValue:
        asgi = importlib.import_module("workers.asgi")  # first request only: just fetch needs it
        _use_webcrypto_for_access()

        env = self._worker_env()
        self.app.prime_schedules(env, self.ctx)  # S-14, kept alive by ctx.waitUntil
        http_app = self._http_apps.get(id(env))
        if http_app is None:  # built once per isolate, like the env adapters it closes over
            http_app = self._http_apps[id(env)] = build_http_app(self.app, env, type(self).routes)
        response: JsValue = await asgi.fetch(http_app, request, self.env, self.ctx)
        return response

    async def queue(self, batch: MessageBatch, *_runtime_args: object) -> None:
        # J-118: the consumer acks every message itself; a raise here would make Queues redeliver.
        await self.app.queue(delivered_messages(unwrap_sdk(batch)), self._worker_env(), self.ctx)

    async def scheduled(self, controller: JsValue, *_runtime_args: object) -> None:
        # J-207: the app's sweep logs what it removed; shard-side cleanup needs no cron.
        await self.app.scheduled(controller, self._worker_env(), self.ctx)


class PerformerEntrypoint(WorkerEntrypoint):  # type: ignore[misc]
    """Serves one performer to other Workers through a service binding.

    The serving Worker exports a subclass named like the performer class, with ``performer`` set; the
    calling Worker binds it with ``{binding: <Tsumugi binding>, service: <this Worker>, entrypoint: <name>}``.
    """

    # J-62

    performer: ClassVar[type[Performer]]

    async def perform(self, payload: JsValue, ctx: RemoteContext) -> JsValue:
        performer = type(self).performer(self.ctx, self._worker_env())
        return await serve_perform(performer, payload, ctx)

    def _worker_env(self) -> WorkerEnv:
        return worker_env_for(self.env)
