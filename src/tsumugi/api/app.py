"""The REST app: the request pipeline of A-12..A-18 in front of one route table, as a Starlette app."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import quote, unquote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tsumugi.api import routes_flows, routes_jobs, routes_mutations, routes_ops
from tsumugi.api.context import RequestContext
from tsumugi.api.openapi import openapi_document
from tsumugi.api.options import RestOptions
from tsumugi.api.wire import HTML_MEDIA_TYPE, TEXT_MEDIA_TYPE, error_response, json_response, not_found_text
from tsumugi.storage.read_model_migrations import MigrationGate

Handler = Callable[[RequestContext], Awaitable[Response]]
_SEGMENT: Final = "([^/]+)"
_log = logging.getLogger("tsumugi.api")

# literal bulk routes come before the {id} routes; methods must match exactly.
ROUTES: Final[tuple[tuple[str, str, Handler], ...]] = (
    ("GET", "/api/jobs", routes_jobs.list_jobs),
    ("POST", "/api/jobs", routes_mutations.create_job),
    ("POST", "/api/jobs/bulk-retry", routes_mutations.bulk_retry),
    ("POST", "/api/jobs/bulk-cancel", routes_mutations.bulk_cancel),
    ("GET", "/api/jobs/{id}", routes_jobs.get_job),
    ("POST", "/api/jobs/{id}/retry", routes_mutations.retry_job),
    ("POST", "/api/jobs/{id}/reschedule", routes_mutations.reschedule_job),
    ("POST", "/api/jobs/{id}/cancel", routes_mutations.cancel_job),
    ("GET", "/api/bindings", routes_jobs.list_bindings),
    ("POST", "/api/bindings/{binding}/policy", routes_ops.update_policy),
    ("POST", "/api/bindings/{binding}/policy/reset", routes_ops.reset_policy),
    ("GET", "/api/metrics", routes_ops.get_metrics),
    ("GET", "/api/stats", routes_jobs.get_stats),
    ("GET", "/api/diagnostics", routes_ops.get_diagnostics),
    ("GET", "/api/schedules", routes_flows.list_schedules),
    ("GET", "/api/runs", routes_flows.list_runs),
    ("POST", "/api/runs", routes_flows.start_run),
    ("GET", "/api/runs/{id}", routes_flows.get_run),
    ("POST", "/api/runs/{id}/retry", routes_flows.retry_run),
    ("POST", "/api/runs/{id}/cancel", routes_flows.cancel_run),
    ("GET", "/api/flows", routes_flows.list_flows),
)


def _compile(template: str) -> tuple[re.Pattern[str], list[str]]:
    names = re.findall(r"\{(\w+)\}", template)
    pattern = re.sub(r"\{\w+\}", _SEGMENT, template)
    return re.compile(pattern), names


_COMPILED: Final = tuple((method, *_compile(path), handler) for method, path, handler in ROUTES)


def match_route(method: str, raw_path: str) -> tuple[Handler, dict[str, str]] | None:
    """The handler for ``method raw_path`` and its percent-decoded path parameters (A-9).

    Matching runs on the raw path so an encoded ``/`` inside an id cannot split a segment.
    """
    for route_method, pattern, names, handler in _COMPILED:
        if route_method != method:
            continue
        found = pattern.fullmatch(raw_path)
        if found:
            return handler, {n: unquote(v) for n, v in zip(names, found.groups(), strict=True)}
    return None


def _raw_path(request: Request) -> str:
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes):
        return raw.decode("latin-1").split("?", 1)[0]
    return quote(str(request.scope["path"]), safe="/:@!$&'()*+,;=-._~")


def request_env(request: Request, options: RestOptions) -> Any:
    """ADR-0060: the runtime puts ``env`` into the ASGI scope's state; else the options' env."""
    state = request.scope.get("state")
    if isinstance(state, dict) and "env" in state:
        return state["env"]
    return options.env


class RestPipeline:
    """A-12..A-18 in order: no auth -> 404, bindings -> 503, auth -> 401, openapi, migrations -> 503."""

    def __init__(self, options: RestOptions) -> None:
        self.options = options
        self.gate = MigrationGate(options.clock.now)

    def _html(self) -> Response | None:
        ui = self.options.ui
        return Response(ui(), status_code=200, media_type=HTML_MEDIA_TYPE) if ui is not None else None

    async def handle(self, request: Request) -> Response:
        options = self.options
        if options.auth is None:
            return PlainTextResponse("not found", status_code=404, media_type=TEXT_MEDIA_TYPE)
        path = str(request.scope["path"])
        method = "GET" if request.method == "HEAD" else request.method
        if not path.startswith("/api/"):
            html = self._html() if method == "GET" else None  # no auth, no migration check
            return html or not_found_text()
        env = request_env(request, options)
        if options.check_bindings is not None:
            report = options.check_bindings(env)
            if report is not None:  # before auth
                return json_response({"error": report.message, "missing": list(report.missing)}, 503)
        refusal = await options.auth(request, env)
        if refusal is not None:
            return refusal
        if method == "GET" and path == "/api/openapi.json":
            return json_response(openapi_document(options.version))  # before the migration check
        status = await self.gate.check(options.database(env))
        if status.kind != "ok":
            return error_response(status.error_message(), 503)
        matched = match_route(method, _raw_path(request))
        if matched is None:
            html = self._html() if method == "GET" else None
            return html or not_found_text()
        handler, params = matched
        return await handler(RequestContext(request, env, options, params))


class _PipelineMiddleware:
    """Hands every HTTP request to the pipeline; the Starlette router below only sees lifespan events.

    Starlette's path routes cannot match a decoded path holding a newline, so routing stays ours.
    """

    def __init__(self, app: ASGIApp, pipeline: RestPipeline) -> None:
        self.app = app
        self.pipeline = pipeline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            response = await self.pipeline.handle(Request(scope, receive))
        except Exception:
            # the framework's plain 500, with the charset spelling of every other text body.
            _log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            response = PlainTextResponse("Internal Server Error", status_code=500, media_type=TEXT_MEDIA_TYPE)
        await response(scope, receive, send)


def create_rest_app(options: RestOptions) -> Starlette:
    """One runtime-agnostic ASGI app serving the whole surface (A-1..A-87)."""
    pipeline = RestPipeline(options)
    app = Starlette(middleware=[Middleware(_PipelineMiddleware, pipeline=pipeline)])
    app.state.pipeline = pipeline
    return app
