"""``define_tsumugi()``: the typed enqueue paths and the fetch/queue/scheduled handlers."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol, overload

from typing_extensions import Unpack

from tsumugi.application.app_settings import AppSettings
from tsumugi.application.bound_jobs import BoundJobs, MappingPayloadT, PayloadT, ResultT
from tsumugi.application.definition import TsumugiDefinition, TsumugiOptions, parse_definition
from tsumugi.application.environment_check import configuration_report, missing_bindings
from tsumugi.application.flow_runs import (
    RunHandle,
    SchedulePrimer,
    control_run,
    list_schedules,
    run_for,
    start_run,
)
from tsumugi.application.flow_runs import send_event as send_run_event
from tsumugi.application.hosting import OutsideWorkers, hosted_class
from tsumugi.application.typed_inputs import TypedInputs
from tsumugi.client import JobClient, ShardHandle, env_binding
from tsumugi.clock import Clock, SystemClock
from tsumugi.core.config import BindingConfig, SweepOptions
from tsumugi.core.enqueue_outcome import EnqueueOutcome
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.mismatch import Mismatch
from tsumugi.core.options import EnqueueInput, EnqueueOptions
from tsumugi.core.wire_format import to_json
from tsumugi.errors import MissingBindingsError
from tsumugi.execution import PerformersResolver, handle_batch
from tsumugi.performer import Performer
from tsumugi.ports import PerformerResolver, QueueMessage, SqlDatabase
from tsumugi.projection import read_model_sweep

if TYPE_CHECKING:
    import httpx
    from starlette.types import ASGIApp

__all__ = ["BoundJobs", "ReadModelSweeper", "Tsumugi", "define_tsumugi"]

_log: Final = logging.getLogger("tsumugi")

ReadModelSweeper = Callable[[SqlDatabase, int, SweepOptions], Awaitable[int]]
ResolverFactory = Callable[[object], PerformerResolver]  # the handler's ctx -> who performs its jobs
_NO_PAYLOAD: Final = object()


class QueueBatch(Protocol):
    """A delivered batch of queue messages, as a Queue consumer receives it."""

    @property
    def messages(self) -> Sequence[QueueMessage]: ...


async def sweep_read_model(db: SqlDatabase, now_ms: int, retention: SweepOptions) -> int:
    """The ``scheduled`` call point into the projection's D1 sweep."""
    # J-172, J-207
    options = read_model_sweep.SweepOptions(older_than_ms=retention.older_than_ms, limit=retention.limit)
    return await read_model_sweep.sweep_read_model(db, now_ms, options)


class Tsumugi(AppSettings):
    """What ``define_tsumugi`` returns: typed enqueue, shard lookup, consumer and cron handlers."""

    def __init__(
        self,
        definition: TsumugiDefinition,
        *,
        clock: Clock | None = None,
        resolver_factory: ResolverFactory | None = None,
        read_model_sweeper: ReadModelSweeper = sweep_read_model,
    ) -> None:
        super().__init__(definition)
        self.clock: Clock = clock or SystemClock()
        self.resolver_factory: ResolverFactory = resolver_factory or self._local_resolver
        self.read_model_sweeper = read_model_sweeper
        self._environment_ok = False
        self._primer = SchedulePrimer() if definition.schedules else None  # S-14
        self._rest_apps: dict[int, tuple[object, ASGIApp]] = {}
        notices = definition.notice_settings
        self._typed = JobClient(
            definition.bindings,
            definition.on_enqueue,
            required_keys=definition.required_keys,
            known_bindings=definition.performers,
            preflight=self.check_environment,
            extra_settings=notices,
        )
        # REST uses the same routing, settings and defaults, minus the typed checks (§5.1, A-19).
        self._rest = JobClient(definition.bindings, definition.on_enqueue, extra_settings=notices)
        # ADR-0140, ADR-0141: payload types and class defaults, for the typed paths and REST alike.
        self._inputs = TypedInputs(definition.performer_classes)
        self._wire_defaults = definition.wire_defaults
        self._hosted_classes: dict[str, type] = {}

    # ------------------------------------------------------------------ Durable Object classes (J-203)
    @property
    def run_class(self) -> type:
        """``TsumugiRun`` bound to this app: ``class TsumugiRun(tsumugi.run_class): pass``."""
        # F-93
        return self._hosted("RunObject", "TsumugiRun")

    @property
    def scheduler_class(self) -> type:
        """``TsumugiScheduler`` bound to this app, for an entry with schedules (S-rules)."""
        return self._hosted("SchedulerObject", "TsumugiScheduler")

    def _hosted(self, base_name: str, class_name: str) -> type:
        """One class per app, so every access names the same class; a stand-in is not kept."""
        cached = self._hosted_classes.get(class_name)
        if cached is None:
            cached = hosted_class(self, base_name, class_name)
            if not issubclass(cached, OutsideWorkers):
                self._hosted_classes[class_name] = cached
        return cached

    # ------------------------------------------------------------------ configuration the REST layer reads
    @property
    def binding_names(self) -> tuple[str, ...]:
        """Registered bindings, in registration order."""
        return tuple(self.definition.performers)

    def binding_config(self, binding: str) -> BindingConfig:
        """The binding's config, or the defaults when none was given."""
        return self._typed.binding_config(binding)

    def static_settings(self, binding: str) -> JsonObject:
        """The settings enqueues carry to ``binding``'s shards: what a policy reset returns to."""
        # J-50
        return {**self.binding_config(binding).settings_wire(), **self.definition.notice_settings}

    # ------------------------------------------------------------------ startup validation (J-24, J-205)
    def missing_bindings(self, env: object) -> list[JsonObject]:
        """The missing bindings as ``{kind, name, className?, reason}``; empty when the env is complete."""
        return missing_bindings(
            env,
            flows=bool(self.definition.flows),
            schedules=bool(self.definition.schedules),
            remote_bindings=self.definition.remote_bindings,
        )

    @staticmethod
    def configuration_report(missing: Sequence[JsonMapping]) -> str:
        """The report for ``missing``: the problems, the steps that fix them and a wrangler fragment."""
        return configuration_report(missing)

    def environment_report(self, env: object) -> tuple[str, list[JsonObject]] | None:
        """``(report, missing)`` when bindings are missing, else None; success is cached."""
        # J-24, A-75
        if self._environment_ok:
            return None
        missing = self.missing_bindings(env)
        if missing:
            return configuration_report(missing), missing
        self._environment_ok = True
        return None

    def check_environment(self, env: object) -> None:
        """Raise ``MissingBindingsError`` with the report; success is cached, failure is not."""
        # J-24
        problems = self.environment_report(env)
        if problems is not None:
            raise MissingBindingsError(problems[0])

    # ------------------------------------------------------------------ enqueue (§5)
    @overload
    async def enqueue(
        self,
        env: object,
        performer: type[Performer[PayloadT, ResultT]],
        payload: PayloadT,
        /,
        **options: Unpack[EnqueueOptions],
    ) -> str: ...

    @overload
    async def enqueue(
        self,
        env: object,
        performer: type[Performer[MappingPayloadT, ResultT]],
        payload: Mapping[str, object],
        /,
        **options: Unpack[EnqueueOptions],
    ) -> str: ...

    @overload
    async def enqueue(
        self, env: object, input: EnqueueInput | Mapping[str, object], /, **options: Unpack[EnqueueInput]
    ) -> str: ...

    @overload
    async def enqueue(
        self, env: object, /, *, binding: str, payload: object, **options: Unpack[EnqueueOptions]
    ) -> str: ...

    async def enqueue(
        self,
        env: object,
        target: type[Performer] | Mapping[str, object] | None = None,
        payload: object = _NO_PAYLOAD,
        /,
        **options: object,
    ) -> str:
        """Enqueue one job and return its id.

        ``enqueue(env, SendMail, MailIn(...), max_attempts=5)`` checks the payload against the
        performer's payload type (``InvalidPayloadError`` names the fields; nothing is enqueued).
        ``enqueue(env, binding="SendMail", payload={...}, **options)`` and ``enqueue(env, {...})`` take
        the binding's name. Options the call leaves unset come from the performer's class attributes.
        """
        self.check_environment(env)  # J-24: before the input is looked at
        if isinstance(target, type):
            if payload is _NO_PAYLOAD:
                raise TypeError(f"enqueue(env, {target.__name__}, payload) needs the payload")
            item = self._inputs.input_for(target, payload, options)
        elif payload is not _NO_PAYLOAD:
            raise TypeError("enqueue takes (env, PerformerClass, payload) or (env, binding=..., payload=...)")
        else:
            item = {**target, **options} if target is not None else options
        return (await self._typed.enqueue_many(env, [self._shaped(item)]))[0]

    def _shaped(self, item: Mapping[str, object]) -> Mapping[str, object]:
        """``item`` as ``TypedInputs.shape`` makes it; untyped or ``object`` payloads skip its checks."""
        binding = item.get("binding") if type(item) is dict else None
        if not isinstance(binding, str):
            return self._inputs.shape(item)
        types = self._inputs.any_json.get(binding)
        if types is None or "payload" not in item:
            return self._inputs.shape(item) if binding in self._inputs.shaped else item
        try:
            return {**item, "payload": to_json(item["payload"])}
        except Mismatch as mismatch:
            raise types.invalid_payload(binding, mismatch) from None

    async def enqueue_many(self, env: object, inputs: Sequence[Mapping[str, object]]) -> list[str]:
        """Enqueue many jobs, grouped per shard, concurrently; ids in input order.

        An input's ``binding`` may be the performer class; payloads are checked like ``enqueue``'s.
        """
        # J-39
        self.check_environment(env)  # J-24: before the inputs are looked at
        return await self._typed.enqueue_many(env, self._inputs.shape_all(inputs))

    def jobs(self, env: object) -> BoundJobs:
        return BoundJobs(self, env)

    def shard_for(self, env: object, binding: str, partition_key: str | None = None) -> ShardHandle:
        """The shard ``binding``'s jobs with ``partition_key`` live in; no startup check."""
        # J-203a
        return self._typed.shard_for(env, binding, partition_key)

    async def rest_enqueue(self, env: object, wire_input: Mapping[str, object]) -> str:
        """``POST /api/jobs``: the same client as ``enqueue`` without required-key checks."""
        return await self._rest.enqueue(env, self._shaped(wire_input))

    async def rest_enqueue_outcome(self, env: object, wire_input: Mapping[str, object]) -> EnqueueOutcome:
        """``POST /api/jobs`` with a debounce or throttle key: what the enqueue did (ADR-0149, ADR-0150)."""
        [outcome] = await self._rest.enqueue_outcomes(env, [self._shaped(wire_input)])
        return outcome

    async def enqueue_outcomes(
        self, env: object, inputs: Sequence[Mapping[str, object]]
    ) -> list[EnqueueOutcome]:
        """``enqueue_many`` answering what each input did: created, existing, debounced or dropped.

        A throttle with ``on_excess="drop"`` answers ``status="dropped"`` (``id`` None) here, where
        ``enqueue`` and ``enqueue_many`` raise ``JobDroppedError`` (ADR-0150).
        """
        self.check_environment(env)  # J-24: before the inputs are looked at
        return await self._typed.enqueue_outcomes(env, self._inputs.shape_all(inputs))

    # ------------------------------------------------------------------ runs and schedules (F-19, S-21)
    async def start(
        self, env: object, flow: str, input: object, id: str | None = None, deadline_ms: int | None = None
    ) -> str:
        """Start a run of ``flow`` and return ``<flow>:<id>``; one ``id`` starts once."""
        # F-19, F-21
        self.check_environment(env)
        return await start_run(env, self.definition.flows, flow, input, id, deadline_ms)

    @staticmethod
    def run_for(env: object, run_id: str) -> RunHandle:
        """The run coordinator's handle: ``start``, ``state``, ``cancel``, ``retry``."""
        # F-19
        return run_for(env, run_id)

    @staticmethod
    async def run_control(env: object, run_id: str, action: str) -> JsonObject:
        """``POST /api/runs/{id}/cancel|retry``: ``{ok}`` or ``{ok: False, reason}``."""
        # F-69, F-77
        return await control_run(env, run_id, action)

    @staticmethod
    async def send_event(env: object, run_id: str, event: str, payload: object = None) -> JsonObject:
        """Send ``event`` to the run's wait-for-event node (ADR-0148); see ``tsumugi.send_event``."""
        return await send_run_event(env, run_id, event, payload)

    @staticmethod
    async def list_schedules(env: object) -> list[JsonObject]:
        """``GET /api/schedules``: straight from the Scheduler."""
        # S-21
        return await list_schedules(env)

    def prime_schedules(self, env: object, ctx: object = None) -> None:
        """the first fetch, queue or scheduled event starts one background scheduler sync."""
        # S-14
        if self._primer is not None:
            self._primer.prime(env, ctx)

    def asgi(self, env: object) -> ASGIApp:
        """The REST API and dashboard for ``env`` as one ASGI app, built once per env (ADR-0100)."""
        cached = self._rest_apps.get(id(env))
        if cached is None or cached[0] is not env:
            # Imported here so a queue-only isolate never loads starlette and pydantic.
            from tsumugi.application.rest_surface import build_rest_app

            cached = self._rest_apps[id(env)] = (env, build_rest_app(self, env))
        return cached[1]

    # ------------------------------------------------------------------ handlers (J-7, J-207)
    async def fetch(self, request: httpx.Request, env: object, ctx: object = None) -> httpx.Response:
        """Serve one request with the REST API and dashboard: ``httpx.Request`` in, ``httpx.Response`` out.

        Lets a custom handler delegate the paths it does not serve; on Workers the entry class
        serves the JS request itself (ADR-0084), so this form is for Python callers (ADR-0126).
        """
        # J-7
        import httpx  # imported here so a queue-only isolate never loads it

        self.prime_schedules(env, ctx)
        transport = httpx.ASGITransport(app=self.asgi(env))
        response = await transport.handle_async_request(request)
        await response.aread()
        response.request = request
        return response

    async def queue(
        self, batch: QueueBatch | Sequence[QueueMessage], env: object, ctx: object = None
    ) -> None:
        """The Queue consumer: ``batch`` is a message batch (``.messages``) or a list of messages."""
        self.prime_schedules(env, ctx)
        messages = batch.messages if hasattr(batch, "messages") else batch
        await handle_batch(
            messages,
            env,
            resolver=self.resolver_factory(ctx),
            clock=self.clock,
            spawn_defaults=self._wire_defaults,
            performer_types=self._inputs.types,
        )

    async def scheduled(self, controller: object, env: object, ctx: object = None) -> int:
        """The cron handler: sweep the read model; returns the number of rows swept."""
        # J-172
        self.prime_schedules(env, ctx)
        db = env_binding(env, "TSUMUGI_DB")
        if db is None:
            _log.error("tsumugi: cannot sweep the read model, TSUMUGI_DB is not configured")
            return 0
        return await self.read_model_sweeper(db, self.clock.now(), self.definition.retention)

    def _local_resolver(self, ctx: object) -> PerformerResolver:
        return PerformersResolver(self.definition.performers, ctx)


def define_tsumugi(
    config: Mapping[str, object] | None = None, /, **options: Unpack[TsumugiOptions]
) -> Tsumugi:
    """Validate the configuration now and return the ``Tsumugi`` object.

    Takes keyword options or a single dict of them; an unknown option is an error. Every mistake is
    reported here, never at the first enqueue.

    The options:

    - ``performers`` (required): binding name -> ``Performer`` subclass, or ``remote(Class)`` for a
      performer served by another Worker.
    - ``bindings``: binding name -> ``BindingConfig`` (or its dict): shards, policy, retention, ``requires``.
    - ``flows``: flow name -> a flow made with ``create_flow``.
    - ``schedules``: schedule name -> ``{"binding": ..., "payload": ...}`` or ``{"flow": ..., "input": ...}``,
      with ``every_ms`` or ``cron``.
    - ``auth``: ``bearer_auth(...)``, ``access_auth(...)`` or your own middleware; without it the REST API
      and the dashboard stay closed (every request answers 404).
    - ``ui``: False turns the dashboard off; a mapping sets its options (``token_cookie``).
    - ``retention``: ``SweepOptions`` for finished rows of the read model.
    - ``runs``: ``RunSettings``, the run limits and retention.
    - ``metrics``: ``env -> {"accountId", "apiToken", "dataset"}``, the credentials that read job metrics
      from Analytics Engine on Cloudflare.
    - ``on_failure``: a binding that gets a notice job for each FAILED or STALLED job.
    - ``on_settled``: a binding (or ``OnSettled``) that gets a notice job for each finished job.
    - ``on_enqueue``: ``(binding, options) -> options``, defaults applied to every enqueue.
    """
    # J-204
    merged: dict[str, object] = {**(config or {}), **options}
    return Tsumugi(parse_definition(merged))
