"""The REST app's own port: ``RestOptions`` and the small protocols it names.

``tsumugi.ports`` holds what the runtimes implement for the engine. These are narrower: what the REST app
asks of the application that serves it (``tsumugi.application.rest_surface`` fills ``RestOptions`` in), so
they live with the app rather than in ``ports``; the engine (coordinator, consumer, projector) never sees
them. Their implementers match them by shape without naming them: the auth middlewares beside this
module, the projection's metrics readers (``MetricsReader``) and the local runtime's gauges
(``RuntimeGauges``, found in the env under ``env_bindings.RUNTIME_GAUGES_BINDING``).

An ``env`` is whatever the runtime hands a request (a Workers env, a mapping, a namespace): the app only
passes it on to these callables and reads bindings from it, so it is typed ``object`` here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tsumugi.api.shapes import CreateJobRequest
from tsumugi.clock import Clock, SystemClock
from tsumugi.core.defaults import DEFAULT_FAILED_RETENTION_MS  # ADR-0157: said once
from tsumugi.core.enqueue_outcome import EnqueueOutcome
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.ports import ShardNamespace, SqlDatabase

if TYPE_CHECKING:  # only named in annotations: a runtime that serves no HTTP never loads starlette
    from starlette.requests import Request
    from starlette.responses import Response

CLOSED_TEXT = "not found"  # the exact body a closed app answers with, revealing nothing
CLOSED_EXPLANATION = (
    "not found\n\n"
    "This app defines no auth, so Tsumugi keeps its REST API and dashboard closed:"
    " every request answers 404.\n"
    "Open them with define_tsumugi(..., auth=bearer_auth(lambda env: env.TSUMUGI_TOKEN)), then send\n"
    "'Authorization: Bearer <token>' (or open the dashboard and enter the token).\n"
    "Only the local runtime explains this; a deployed Worker answers a bare 'not found'.\n"
)


class AuthMiddleware(Protocol):
    """returns a response to refuse (conventionally 401) or None to continue."""

    #

    async def __call__(self, request: Request, env: object) -> Response | None: ...


class MetricsReader(Protocol):
    """Answers ``/api/metrics``: ``{"bindings": [...], "series": [...]}`` in wire shapes.

    Raises ``tsumugi.errors.MetricsUpstreamError`` for a refusal or timeout upstream (502).
    """

    # M-8..M-11, M-12

    async def read(self, hours: int, binding: str | None) -> JsonObject: ...


class RuntimeGauges(Protocol):
    """What a runtime adds to ``GET /metrics`` (ADR-0139): what only it can read, and since when it counts."""

    @property
    def started_at_ms(self) -> int:
        """The runtime's start: the ``tsumugi_*_total`` counters count metric points from this instant."""
        ...

    def queue_depth(self) -> int:
        """Messages in the runtime's dispatch queue, leased or waiting."""
        ...


@dataclass(frozen=True)
class BindingOptions:
    """Per-binding facts the API needs: shard count, retry window, the static settings to reset to."""

    shards: int = 1
    failed_retention_ms: int = DEFAULT_FAILED_RETENTION_MS
    static_settings: JsonObject | None = None


@dataclass(frozen=True)
class MissingBindingsReport:
    """the 503 body's ``error`` text and ``missing`` entries."""

    #

    message: str
    missing: Sequence[JsonMapping]


def _env_attr(name: str) -> Callable[[object], Any]:
    # What a runtime bound under ``name`` (on Workers a JS proxy): the field it fills names its type.
    def read(env: object) -> Any:
        return env.get(name) if isinstance(env, Mapping) else getattr(env, name, None)

    return read


# The answers are only read, so any mapping will do (a coordinator's dict, a typed dict).
EnqueueFn = Callable[[object, CreateJobRequest], Awaitable[str]]
EnqueueOutcomeFn = Callable[[object, CreateJobRequest], Awaitable[EnqueueOutcome]]
StartRunFn = Callable[[object, str, object, str | None, int | None], Awaitable[str]]
RunControlFn = Callable[[object, str, str], Awaitable[Mapping[str, object]]]
RunEventFn = Callable[[object, str, str, JsonValue], Awaitable[Mapping[str, object]]]
SchedulesFn = Callable[[object], Awaitable[Sequence[Mapping[str, object]]]]


@dataclass(frozen=True)
class RestOptions:
    """Everything ``create_rest_app`` serves. Each request's ``env`` is ``scope["state"]["env"]`` when the
    server put one there (Starlette lifespan state, or the Workers adapter), else ``env`` below (ADR-0060).

    Attributes:
        auth: None means every request answers 404 with ``closed_text`` as its body.
        performers: registered binding names in registration order; None = standalone.
        bindings: per-binding options; a binding not listed gets the defaults.
        enqueue: ``async (env, accepted body) -> job id``; None -> 501.
        enqueue_outcome: ``async (env, accepted body) -> EnqueueOutcome``, for a body with a debounce or
            throttle key, whose answer says whether it debounced or dropped (ADR-0149, ADR-0150).
        flows: registered flow names; empty -> runs 501.
        start_run: ``async (env, flow, input, local_id | None, deadline_ms | None) -> run id``.
        run_control: ``async (env, run_id, "retry" | "cancel") -> {"ok": bool, "reason"?: str}``.
        run_event: ``async (env, run_id, event, payload) -> {"ok": bool, "node"?, "state"?, "reason"?}``.
        schedules: ``async (env) -> list of Schedule dicts``; None -> 501.
        metrics: ``env -> MetricsReader | None``, evaluated per request; None -> 501.
        check_bindings: ``env -> MissingBindingsReport | None``; None = standalone, no check.
        ui: returns the dashboard HTML; None -> no fallback.
        prometheus: ``env -> RuntimeGauges | None``, evaluated per request; with gauges ``GET /metrics`` is
            served behind the API's pipeline, else ``/metrics`` is an unknown path (ADR-0139).
    """

    #

    auth: AuthMiddleware | None
    performers: Sequence[str] | None = None
    bindings: Mapping[str, BindingOptions] = field(default_factory=dict)
    enqueue: EnqueueFn | None = None
    enqueue_outcome: EnqueueOutcomeFn | None = None
    flows: Sequence[str] = ()
    start_run: StartRunFn | None = None
    run_control: RunControlFn | None = None
    run_event: RunEventFn | None = None  # ADR-0148
    schedules: SchedulesFn | None = None
    metrics: Callable[[object], MetricsReader | None] | None = None
    check_bindings: Callable[[object], MissingBindingsReport | None] | None = None
    ui: Callable[[], str] | None = None
    prometheus: Callable[[object], RuntimeGauges | None] | None = None
    env: object = None
    database: Callable[[object], SqlDatabase] = field(default=_env_attr("TSUMUGI_DB"))
    shards: Callable[[object], ShardNamespace] = field(default=_env_attr("JOB_SHARD"))
    clock: Clock = field(default_factory=SystemClock)
    version: str | None = None  # None: the installed package version
    closed_text: str = CLOSED_TEXT

    def binding(self, name: str) -> BindingOptions:
        return self.bindings.get(name) or BindingOptions()
