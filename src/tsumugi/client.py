"""create_client(): enqueue from another Worker through the JOB_SHARD binding alone.

``JobClient`` is the one enqueue path: the typed paths of ``define_tsumugi`` wrap it with
their extra checks, ``create_client`` uses it with the bindings it is given, and the package-level
``enqueue``/``enqueue_many``/``shard_for`` use it untyped (shard 0, no settings).
This module never imports the shard implementation (import-linter).
"""
# J-200, J-22, §5.1

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from tsumugi import telemetry
from tsumugi.core.config import BindingConfig, Policy, binding_config_from
from tsumugi.core.config_checks import camel_case, from_mapping, is_number
from tsumugi.core.enqueue_keys import EnqueueOutcome, outcome_from_wire
from tsumugi.core.ids import resolve_shard, shard_name, validate_binding
from tsumugi.core.input_bounds import clamp_duration, clamp_instant, clamp_safe
from tsumugi.core.options import (
    OnEnqueue,
    apply_defaults,
    check_payload,
    check_required_keys,
    input_from,
    to_wire_input,
)
from tsumugi.errors import (
    ConfigurationError,
    EnqueueError,
    InvalidConfigError,
    InvalidJobIdError,
    JobDroppedError,
)
from tsumugi.ports import JsonDict, ShardNamespace, ShardRpc

__all__ = ["JobClient", "ShardHandle", "create_client", "enqueue", "enqueue_many", "env_binding", "shard_for"]

SHARD_NAMESPACE: Final = "JOB_SHARD"  # the Durable Object binding every enqueue path needs (J-200)
_SETTINGS_FIELDS: Final = ("policy", "sweep_after_ms", "failed_retention_ms")
_PLAIN_KEYS: Final = frozenset({"binding", "payload"})
# A namespace attribute: True when ``enqueue_many`` reaches the shard in process, with the payloads as
# Python objects, so the shard's own check of a single group's payloads stands for the client's.
SHARD_CHECKS_PAYLOADS: Final = "shard_checks_payloads"


def env_binding(env: Any, name: str) -> Any:
    """``env[name]`` for a mapping, else ``env.<name>``; None when absent (treats None as absent)."""
    # J-205
    if isinstance(env, Mapping):
        return env.get(name)
    return getattr(env, name, None)


def _namespace(env: Any) -> ShardNamespace:
    namespace = env_binding(env, SHARD_NAMESPACE)
    if namespace is None:
        raise ConfigurationError(f"{SHARD_NAMESPACE} is not configured: the environment has no such binding")
    return namespace  # type: ignore[no-any-return]


def _bounded(value: Any, clamp: Callable[[float], float]) -> Any:
    """A finite number clamped; anything else passes for the shard to judge."""
    return clamp(value) if is_number(value) else value


class ShardHandle:
    """A shard stub whose ``configure`` also takes config objects and snake_case fields."""

    # J-175

    __slots__ = ("_extra", "_static", "stub")

    def __init__(self, stub: ShardRpc, extra_settings: JsonDict, static: JsonDict | None = None) -> None:
        self.stub = stub
        self._extra = extra_settings
        self._static = static  # the binding's settings as enqueues carry them (J-50)

    async def configure(
        self,
        settings: Mapping[str, Any] | None = None,
        *,
        policy: Policy | Mapping[str, Any] | None = None,
        sweep_after_ms: int | None = None,
        failed_retention_ms: int | None = None,
    ) -> JsonDict:
        """Replace and pin this shard's settings; omitted fields revert to defaults."""
        # J-51, J-175
        fields = from_mapping(
            "configure", settings or {}, ("policy", "sweep_after_ms", "failed_retention_ms")
        )
        given = {
            "policy": policy,
            "sweep_after_ms": sweep_after_ms,
            "failed_retention_ms": failed_retention_ms,
        }
        fields.update({name: value for name, value in given.items() if value is not None})
        config = binding_config_from(fields)
        if config.policy is not None and config.policy.has_override_functions:
            raise InvalidConfigError(
                "configure takes per-key overrides as mappings, not functions (ADR-0056)"
            )
        # ADR-0059: pinned settings replace the enqueue-carried ones, so they keep the notice targets.
        return await self.stub.configure({**config.settings_wire(), **self._extra})

    async def enqueue_many(self, inputs: Sequence[JsonDict], settings: JsonDict | None = None) -> list[str]:
        return await self.stub.enqueue_many(inputs, settings)

    async def enqueue_outcomes(
        self, inputs: Sequence[JsonDict], settings: JsonDict | None = None
    ) -> list[JsonDict]:
        return await self.stub.enqueue_outcomes(inputs, settings)

    async def report(self, job_id: str, outcome: JsonDict) -> None:
        await self.stub.report(job_id, outcome)

    async def heartbeat(self, job_id: str, progress: Any = None, attempt: int | None = None) -> JsonDict:
        return await self.stub.heartbeat(job_id, progress, attempt)

    async def claim(self, job_id: str) -> bool:
        return await self.stub.claim(job_id)

    async def expire(self, job_id: str) -> bool:
        return await self.stub.expire(job_id)

    async def retry(self, job_id: str) -> JsonDict:
        return await self.stub.retry(job_id)

    async def cancel(self, job_id: str) -> JsonDict:
        return await self.stub.cancel(job_id)

    async def reschedule(
        self,
        job_id: str,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: float | None = None,
    ) -> JsonDict:
        """Move a SCHEDULED job; numbers are clamped to what the shard stores (ADR-0133)."""
        # J-133
        return await self.stub.reschedule(
            job_id,
            _bounded(run_at, clamp_instant),
            _bounded(delay_ms, clamp_duration),
            _bounded(priority, clamp_safe),
        )

    async def mutate_many(self, action: str, job_ids: Sequence[str]) -> JsonDict:
        return await self.stub.mutate_many(action, job_ids)

    async def update_policy(self, patch: Mapping[str, Any], settings: JsonDict | None = None) -> JsonDict:
        """Change only the given policy fields and pin; a bad value raises and changes nothing.

        ``patch`` takes snake_case or camelCase fields; None reverts a field to its default. A shard
        not yet pinned merges onto ``settings``, by default this client's config of the binding
        (ADR-0131: before its first enqueue a shard knows only the defaults).
        """
        # J-176
        given = from_mapping("update_policy", patch, Policy.__dataclass_fields__)
        checked = Policy(**{name: value for name, value in given.items() if value is not None})
        if checked.has_override_functions:
            raise InvalidConfigError("update_policy takes per-key overrides as mappings, not functions")
        full = checked.to_wire()
        wire = {
            camel_case(name): None if value is None else full.get(camel_case(name))
            for name, value in given.items()
        }
        return await self.stub.update_policy(wire, settings if settings is not None else self._static)

    async def reset_policy(self, settings: JsonDict | None = None) -> JsonDict:
        return await self.stub.reset_policy(settings)

    async def diagnostics(self) -> JsonDict:
        return await self.stub.diagnostics()

    async def state_of(self, job_id: str) -> str | None:
        return await self.stub.state_of(job_id)


class _Route:
    """Static per-binding routing and settings, computed once (no per-enqueue config validation)."""

    __slots__ = ("config", "dynamic", "settings")

    def __init__(self, config: BindingConfig, extra: JsonDict) -> None:
        self.config = config
        policy = config.policy
        self.dynamic = policy is not None and policy.has_override_functions
        settings = {**config.settings_wire(), **extra}
        self.settings: JsonDict | None = settings or None

    def settings_for(self, inputs: Sequence[JsonDict]) -> JsonDict | None:
        if not self.dynamic:
            return self.settings
        keys = dict.fromkeys(i["concurrencyKey"] for i in inputs if i.get("concurrencyKey") is not None)
        # ADR-0056: function overrides are evaluated for the keys this RPC carries.
        return {**(self.settings or {}), **self.config.settings_wire(keys)}


class JobClient:
    """Enqueues jobs and finds shards; the shared engine of every enqueue path."""

    # J-22, J-39

    def __init__(
        self,
        bindings: Mapping[str, BindingConfig | Mapping[str, Any]] | None = None,
        on_enqueue: OnEnqueue | None = None,
        *,
        routed: bool = True,
        extra_settings: JsonDict | None = None,
        required_keys: Mapping[str, frozenset[str]] | None = None,
        known_bindings: Iterable[str] | None = None,
        preflight: Callable[[Any], None] | None = None,
    ) -> None:
        self._routed = routed
        self._on_enqueue = on_enqueue
        self._extra = dict(extra_settings or {})
        self._routes: dict[str, _Route] = {}
        for binding, config in (bindings or {}).items():
            validate_binding(binding)
            self._routes[binding] = _Route(binding_config_from(config), self._extra)
        self._default_route = _Route(BindingConfig(), self._extra)
        self._required = dict(required_keys or {})
        self._known = frozenset(known_bindings) if known_bindings is not None else None
        self._preflight = preflight
        # Per binding: where a plain {binding, payload} input goes, or None when it needs the full path.
        self._plain: dict[str, tuple[_Route, str] | None] = {}

    def binding_config(self, binding: str) -> BindingConfig:
        route = self._routes.get(binding)
        return route.config if route else self._default_route.config

    async def enqueue(self, env: Any, input: Mapping[str, Any] | None = None, /, **options: Any) -> str:
        """Enqueue one job; ``input`` and keyword options merge (keywords win). Returns its id."""
        item = {**input, **options} if input is not None else options
        return (await self.enqueue_many(env, [item]))[0]

    async def enqueue_many(self, env: Any, inputs: Sequence[Mapping[str, Any]]) -> list[str]:
        """Enqueue many jobs, one RPC per destination shard, concurrently; ids in input order."""
        # J-39
        if telemetry.active is not None:  # ADR-0143: a tsumugi.enqueue span, its context as traceparent
            return await telemetry.active.enqueue(inputs, lambda traced: self._enqueue_many(env, traced))
        return await self._enqueue_many(env, inputs)

    async def enqueue_outcomes(self, env: Any, inputs: Sequence[Mapping[str, Any]]) -> list[EnqueueOutcome]:
        """``enqueue_many`` answering what each input did: created, existing, debounced or dropped.

        A throttle that drops a job answers ``EnqueueOutcome(id=None, status="dropped")`` here, where
        ``enqueue_many`` raises ``JobDroppedError`` (ADR-0150).
        """
        if telemetry.active is not None:  # ADR-0143: the same tsumugi.enqueue span as enqueue_many
            return await telemetry.active.enqueue(inputs, lambda traced: self._outcomes(env, traced))
        return await self._outcomes(env, inputs)

    async def _outcomes(self, env: Any, inputs: Sequence[Mapping[str, Any]]) -> list[EnqueueOutcome]:
        wires: list[JsonDict] = await self._send(env, inputs, detailed=True)
        return [outcome_from_wire(wire) for wire in wires]

    async def _enqueue_many(self, env: Any, inputs: Sequence[Mapping[str, Any]]) -> list[str]:
        ids: list[str] = await self._send(env, inputs, detailed=False)
        for index, job_id in enumerate(ids):
            if job_id == "":  # ADR-0150: no job, so no id to return
                key = inputs[index].get("throttle_key") or inputs[index].get("throttleKey")
                raise JobDroppedError(f"the throttle of key {key!r} dropped the job: no job was created")
        return ids

    async def _send(self, env: Any, inputs: Sequence[Mapping[str, Any]], *, detailed: bool) -> list[Any]:
        """One RPC per destination shard, concurrently; ids (or outcomes when ``detailed``) in input order."""
        if self._preflight is not None:
            self._preflight(env)  # J-24: the typed paths check the environment first
        groups: dict[str, tuple[_Route, list[int], list[JsonDict]]] = {}
        unchecked: list[Any] = []  # payloads of plain inputs, checked below unless the shard does it
        for index, raw in enumerate(inputs):
            route, name, wire = self._prepare(raw, unchecked)
            group = groups.get(name)
            if group is None:
                groups[name] = (route, [index], [wire])
            else:
                group[1].append(index)
                group[2].append(wire)
        if not groups:
            return []
        namespace = _namespace(env)
        # J-27, J-39: a bad payload fails before any RPC. A single group goes to one shard, which checks
        # every payload in its one synchronous pass, so a namespace that hands the shard Python objects
        # (SHARD_CHECKS_PAYLOADS) spares the client a second encoding (ADR-0120).
        if unchecked and (len(groups) > 1 or not getattr(namespace, SHARD_CHECKS_PAYLOADS, False)):
            for payload in unchecked:
                check_payload(payload)
        ids: list[Any] = [""] * len(inputs)

        async def send(name: str, route: _Route, positions: list[int], wires: list[JsonDict]) -> None:
            stub = namespace.get(name)
            call = stub.enqueue_outcomes if detailed else stub.enqueue_many
            returned: list[Any] = await call(wires, route.settings_for(wires))
            for position, job_id in zip(positions, returned, strict=True):
                ids[position] = job_id

        if len(groups) == 1:
            name, (route, positions, wires) = next(iter(groups.items()))
            await send(name, route, positions, wires)
        else:
            await asyncio.gather(*(send(n, r, p, w) for n, (r, p, w) in groups.items()))
        return ids

    def _prepare(self, raw: Mapping[str, Any], unchecked: list[Any]) -> tuple[_Route, str, JsonDict]:
        """Route and wire of one input; a plain input's payload goes to ``unchecked`` (ADR-0120)."""
        if self._on_enqueue is None and type(raw) is dict and raw.keys() == _PLAIN_KEYS:
            binding = raw["binding"]
            plain = self._plain_route(binding) if type(binding) is str else None
            if plain is not None:  # the same checks, settled once per binding (ADR-0120)
                unchecked.append(raw["payload"])
                return plain[0], plain[1], {"binding": binding, "payload": raw["payload"]}
        options = apply_defaults(input_from(raw), self._on_enqueue)
        binding = options.get("binding")
        if not isinstance(binding, str):
            raise EnqueueError("binding is required")
        validate_binding(binding)  # J-25: before any RPC
        if self._known is not None and binding not in self._known:
            raise EnqueueError(f"unknown binding: {binding}")  # ADR-0058
        required = self._required.get(binding)
        if required:
            check_required_keys(binding, options, required)  # J-70
        wire = to_wire_input(options)
        partition_key = wire.pop("partitionKey", None)  # routing only, never stored (§5.2)
        route = self._routes.get(binding, self._default_route)
        if not self._routed:
            return route, shard_name(binding, 0), wire
        shard = resolve_shard(binding, route.config.shards, partition_key)
        return route, shard_name(binding, shard), wire

    def _plain_route(self, binding: str) -> tuple[_Route, str] | None:
        """The route of a plain input for ``binding``; None when only the full path gives the answer."""
        if binding in self._plain:
            return self._plain[binding]
        plain: tuple[_Route, str] | None = None
        try:
            validate_binding(binding)
        except InvalidJobIdError:
            return None  # the full path raises it
        known = self._known is None or binding in self._known
        route = self._routes.get(binding, self._default_route)
        single = not self._routed or route.config.shards == 1
        if known and single and not self._required.get(binding):
            plain = (route, shard_name(binding, 0))
        self._plain[binding] = plain
        return plain

    def shard_for(self, env: Any, binding: str, partition_key: str | None = None) -> ShardHandle:
        """The shard a job of ``binding`` with ``partition_key`` goes to; no startup check."""
        # J-203a
        if self._known is not None and binding not in self._known:
            raise ConfigurationError(f"unknown binding: {binding}")  # ADR-0058, like the typed enqueue
        route = self._routes.get(binding, self._default_route)
        index = resolve_shard(validate_binding(binding), route.config.shards, partition_key)
        stub = _namespace(env).get(shard_name(binding, index))
        return ShardHandle(stub, self._extra, route.settings)


def create_client(
    bindings: Mapping[str, BindingConfig | Mapping[str, Any]] | None = None,
    on_enqueue: OnEnqueue | None = None,
) -> JobClient:
    """A client that needs only ``JOB_SHARD``; ``bindings`` must mirror the main Worker's."""
    # J-200, J-201
    return JobClient(bindings, on_enqueue)


_UNTYPED: Final = JobClient(routed=False)


async def enqueue(env: Any, input: Mapping[str, Any]) -> str:
    """Untyped enqueue: shard 0, ``partition_key`` ignored, no settings pushed."""
    return await _UNTYPED.enqueue(env, input)


async def enqueue_many(env: Any, inputs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Untyped ``enqueue_many``: every job to shard 0 of its binding, no settings."""
    return await _UNTYPED.enqueue_many(env, inputs)


def shard_for(env: Any, binding: str, shard: int = 0) -> ShardRpc:
    """The shard with index ``shard`` of ``binding`` (an index, not a partition key)."""
    # J-203a
    return ShardHandle(_namespace(env).get(shard_name(binding, shard)), {})
