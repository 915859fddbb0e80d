"""The REST API and dashboard of one app for one ``env``: RestOptions from the definition (ADR-0100)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from tsumugi.api import BindingOptions, MetricsReader, MissingBindingsReport, RestOptions, create_rest_app
from tsumugi.api.env_bindings import EXPLAIN_CLOSED_BINDING, RUNTIME_GAUGES_BINDING
from tsumugi.api.options import CLOSED_EXPLANATION, CLOSED_TEXT, RuntimeGauges
from tsumugi.client import env_binding
from tsumugi.clock import Clock
from tsumugi.projection.analytics_engine import analytics_engine_metrics
from tsumugi.storage.metrics_reader import LocalMetricsReader
from tsumugi.ui import dashboard_html

if TYPE_CHECKING:
    from tsumugi.application.definition import MetricsCredentials
    from tsumugi.application.tsumugi import Tsumugi

__all__ = ["build_rest_app", "metrics_resolver", "rest_options", "runtime_gauges"]

MetricsResolver = Callable[[object], MetricsReader | None]


def rest_options(app: Tsumugi, env: object) -> RestOptions:
    """Everything ``create_rest_app`` serves for ``app`` in ``env``."""
    return RestOptions(
        auth=app.auth,  # None: every request answers 404
        performers=app.binding_names,
        bindings={
            name: BindingOptions(
                shards=config.shards,
                failed_retention_ms=config.failed_retention_ms,
                static_settings=app.static_settings(name),  # what a policy reset returns to
            )
            for name, config in ((name, app.binding_config(name)) for name in app.binding_names)
        },
        enqueue=app.rest_enqueue,
        enqueue_outcome=app.rest_enqueue_outcome,
        flows=tuple(app.flows),
        start_run=app.start if app.flows else None,
        run_control=app.run_control if app.flows else None,
        run_event=app.send_event if app.flows else None,
        schedules=app.list_schedules if app.schedules else None,
        metrics=metrics_resolver(app.metrics, app.clock),
        check_bindings=lambda request_env: _missing_report(app, request_env),
        ui=_dashboard(app.ui, app.auth),
        prometheus=runtime_gauges,
        env=env,
        clock=app.clock,
        # ADR-0145: only a runtime that asks for it explains the closed app; a Worker reveals nothing.
        closed_text=CLOSED_EXPLANATION if env_binding(env, EXPLAIN_CLOSED_BINDING) is True else CLOSED_TEXT,
    )


def metrics_resolver(resolve: MetricsCredentials | None, clock: Clock) -> MetricsResolver:
    """``/api/metrics`` readers (ADR-0100): Analytics Engine when ``metrics(env)`` gives credentials,
    else the local runtime's metrics table, in a read model that ``holds_metrics``; otherwise none."""
    #
    remote = analytics_engine_metrics(resolve) if resolve is not None else None

    def reader(env: object) -> MetricsReader | None:
        found = remote(env) if remote is not None else None
        if found is not None:
            return found
        if env_binding(env, "TSUMUGI_METRICS") is not None:
            return None  # M-6: points go to Analytics Engine, which needs credentials to read
        db = env_binding(env, "TSUMUGI_DB")
        # a Worker's D1 holds no metric points, so without a resolver it is "not configured" (501).
        return LocalMetricsReader(db, clock) if getattr(db, "holds_metrics", False) else None

    return reader


def runtime_gauges(env: object) -> RuntimeGauges | None:
    """ADR-0139: ``GET /metrics`` is served where the runtime binds its gauges (the local runtime does);
    on a Worker nothing binds them, so ``/metrics`` stays an unknown path."""
    found = env_binding(env, RUNTIME_GAUGES_BINDING)
    if not callable(getattr(found, "queue_depth", None)):
        return None  # absent, or a var of that name: not a runtime's gauges
    gauges: RuntimeGauges = found
    return gauges


def build_rest_app(app: Tsumugi, env: object) -> ASGIApp:
    """The REST app, behind a wrapper that primes the scheduler on the first request."""
    # S-14
    rest = create_rest_app(rest_options(app, env))

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            app.prime_schedules(env)
        await rest(scope, receive, send)

    return serve


def _missing_report(app: Tsumugi, env: object) -> MissingBindingsReport | None:
    """The configuration report and its entries while bindings are missing (success is cached)."""
    problems = app.environment_report(env)
    return None if problems is None else MissingBindingsReport(problems[0], problems[1])


def _dashboard(ui: object, auth: object) -> Callable[[], str] | None:
    """served only when enabled and auth is configured; the token cookie is the auth's."""
    # U-2, U-6, U-1
    if not ui or auth is None:
        return None
    cookie = ui.get("token_cookie") if isinstance(ui, Mapping) else getattr(auth, "cookie", None)
    return lambda: dashboard_html(cookie)
