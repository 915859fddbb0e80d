"""The REST app: the request pipeline (auth, bindings, migrations) before one route table, in Starlette.

Paths are read as the original's router reads them (ADR-0133): routes match the path with every escape
decoded except those of URI delimiters (``%2F``, ``%23``, ``%3A``, ...) and ``%25``, and each path
parameter is then decoded once more, completely. ``/api`` itself is under the API, like ``/api/*``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tsumugi.api import (
    routes_bulk,
    routes_flows,
    routes_jobs,
    routes_mutations,
    routes_ops,
    routes_run_events,
)
from tsumugi.api.context import RequestContext
from tsumugi.api.openapi import openapi_document
from tsumugi.api.options import RestOptions, RuntimeGauges
from tsumugi.api.prometheus import METRICS_PATH, PrometheusEndpoint
from tsumugi.api.wire import (
    HTML_MEDIA_TYPE,
    TEXT_MEDIA_TYPE,
    TooLargeError,
    error_response,
    json_response,
    not_found_text,
)
from tsumugi.errors import StorageFullError
from tsumugi.storage.read_model_migrations import MigrationGate

Handler = Callable[[RequestContext], Awaitable[Response]]
_SEGMENT: Final = "([^/]+)"
_log = logging.getLogger("tsumugi.api")
STORAGE_FULL: Final = "storage is full"  # ADR-0133: 503; the store logs the episode once
_ESCAPE_RUN: Final = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]")
# decodeURI leaves the escapes of these as they are; the router also keeps %25, so "%2541" stays "%2541".
_KEPT_ESCAPES: Final = frozenset(b";/?:@&=+$,#%")
NO_AUTH_WARNING: Final = (
    "tsumugi: this app defines no auth, so the REST API and dashboard answer 404 to every request; "
    "pass auth=bearer_auth(...) to define_tsumugi to open them"
)

# literal bulk routes come before the {id} routes; methods must match exactly.
ROUTES: Final[tuple[tuple[str, str, Handler], ...]] = (
    ("GET", "/api/jobs", routes_jobs.list_jobs),
    ("POST", "/api/jobs", routes_mutations.create_job),
    ("POST", "/api/jobs/bulk-retry", routes_mutations.bulk_retry),
    ("POST", "/api/jobs/bulk-cancel", routes_mutations.bulk_cancel),
    ("POST", "/api/bulk", routes_bulk.start_bulk),  # ADR-0151
    ("GET", "/api/bulk/{id}", routes_bulk.get_bulk),
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
    ("POST", "/api/runs/{id}/events/{event}", routes_run_events.send_run_event),  # ADR-0148
    ("GET", "/api/flows", routes_flows.list_flows),
)


def _compile(template: str) -> tuple[re.Pattern[str], list[str]]:
    names = re.findall(r"\{(\w+)\}", template)
    pattern = re.sub(r"\{\w+\}", _SEGMENT, template)
    return re.compile(pattern), names


_COMPILED: Final = tuple((method, *_compile(path), handler) for method, path, handler in ROUTES)


def _decode_run(run: str, keep: frozenset[int]) -> str:
    """One run of ``%XX`` escapes as UTF-8, escapes of bytes in ``keep`` left as written.

    A run that is not valid UTF-8 stays as written, as the original's router leaves it.
    """
    tokens = [run[i : i + 3] for i in range(0, len(run), 3)]
    out: list[str] = []
    pending = bytearray()
    try:
        for token in tokens:
            byte = int(token[1:], 16)
            if byte in keep:
                out.append(pending.decode("utf-8"))
                pending.clear()
                out.append(token)
            else:
                pending.append(byte)
        out.append(pending.decode("utf-8"))
    except UnicodeDecodeError:
        return run
    return "".join(out)


def routing_path(raw_path: str) -> str:
    """The path routes match (ADR-0133): like decodeURI, with ``%25`` kept; bad escapes stay."""
    return _ESCAPE_RUN.sub(lambda run: _decode_run(run.group(), _KEPT_ESCAPES), raw_path)


def decode_param(segment: str) -> str:
    """A path parameter decoded completely, once: like decodeURIComponent; bad escapes stay."""
    #
    return _ESCAPE_RUN.sub(lambda run: _decode_run(run.group(), frozenset()), segment)


def match_route(method: str, path: str) -> tuple[Handler, dict[str, str]] | None:
    """The handler for ``method path`` (a ``routing_path``) and its decoded path parameters.

    An escaped ``/`` is still escaped in a routing path, so it cannot split a segment.
    """
    #
    for route_method, pattern, names, handler in _COMPILED:
        if route_method != method:
            continue
        found = pattern.fullmatch(path)
        if found:
            return handler, {n: decode_param(v) for n, v in zip(names, found.groups(), strict=True)}
    return None


def _raw_path(request: Request) -> str:
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes):
        text = raw.decode("latin-1").split("?", 1)[0]
        # As a URL parser would: bytes beyond ASCII in the request line are escaped as UTF-8.
        return _NON_ASCII.sub(lambda found: f"%{ord(found.group()):02X}", text)
    return quote(str(request.scope["path"]), safe="/:@!$&'()*+,;=-._~")


def is_api_path(path: str) -> bool:
    """the original's middlewares cover ``/api`` and ``/api/*``."""
    #
    return path == "/api" or path.startswith("/api/")


def request_env(request: Request, options: RestOptions) -> object:
    """ADR-0060: the runtime puts ``env`` into the ASGI scope's state; else the options' env."""
    state = request.scope.get("state")
    if isinstance(state, dict) and "env" in state:
        return state["env"]
    return options.env


class RestPipeline:
    """In order: no auth -> 404, bindings -> 503, auth -> 401, openapi, migrations -> 503."""

    def __init__(self, options: RestOptions) -> None:
        self.options = options
        self.gate = MigrationGate(options.clock.now)
        self.prometheus = PrometheusEndpoint()

    def _runtime_gauges(self, path: str, env: object) -> RuntimeGauges | None:
        """ADR-0139: ``/metrics`` is guarded like ``/api`` where a runtime offers gauges, else unknown."""
        resolve = self.options.prometheus
        return resolve(env) if path == METRICS_PATH and resolve is not None else None

    def _html(self) -> Response | None:
        ui = self.options.ui
        return Response(ui(), status_code=200, media_type=HTML_MEDIA_TYPE) if ui is not None else None

    async def handle(self, request: Request) -> Response:
        options = self.options
        if options.auth is None:
            return PlainTextResponse(options.closed_text, status_code=404, media_type=TEXT_MEDIA_TYPE)
        path = routing_path(_raw_path(request))
        method = "GET" if request.method == "HEAD" else request.method
        env = request_env(request, options)
        gauges = self._runtime_gauges(path, env)
        if gauges is None and not is_api_path(path):
            html = self._html() if method == "GET" else None  # no auth, no migration check
            return html or not_found_text()
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
        if gauges is not None:  # ADR-0139: other methods end as A-18's unknown paths
            return await self.prometheus.serve(options, env, gauges) if method == "GET" else not_found_text()
        matched = match_route(method, path)
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
        except TooLargeError as refused:
            response = error_response(refused.message, 413)  # ADR-0133: a body or payload over its limit
        except StorageFullError:
            response = error_response(STORAGE_FULL, 503)  # ADR-0133: JSON, and logged where it was raised
        except Exception:
            # the framework's plain 500, with the charset spelling of every other text body.
            _log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            response = PlainTextResponse("Internal Server Error", status_code=500, media_type=TEXT_MEDIA_TYPE)
        await response(scope, receive, send)


def create_rest_app(options: RestOptions) -> Starlette:
    """One runtime-agnostic ASGI app serving the whole surface."""
    # A-1..A-87
    if options.auth is None:
        # ADR-0145: the wire stays closed; the operator learns why from the log, once per app.
        _log.warning(NO_AUTH_WARNING)
    pipeline = RestPipeline(options)
    app = Starlette(middleware=[Middleware(_PipelineMiddleware, pipeline=pipeline)])
    app.state.pipeline = pipeline
    return app
