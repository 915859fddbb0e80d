"""create_client(): enqueue from another Worker through the JOB_SHARD binding alone.

``JobClient`` is the one enqueue path: the typed paths of ``define_tsumugi`` wrap it with
their extra checks, ``create_client`` uses it with the bindings it is given, and the package-level
``enqueue``/``enqueue_many``/``shard_for`` use it untyped (shard 0, no settings).
This module never imports the shard implementation (import-linter).
"""
# J-200, J-22, §5.1

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from tsumugi import telemetry
from tsumugi.core.config import BindingConfig, binding_config_from
from tsumugi.core.enqueue_outcome import EnqueueOutcome, outcome_from_wire
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.options import (
    OnEnqueue,
    apply_defaults,
    check_payload,
    check_required_keys,
    input_from,
    to_wire_input,
)
from tsumugi.core.wire_format import resolve_shard, shard_name, validate_binding
from tsumugi.errors import (
    ConfigurationError,
    EnqueueError,
    InvalidJobIdError,
    JobDroppedError,
)
from tsumugi.ports import ShardNamespace, ShardRpc
from tsumugi.shard_handle import ShardHandle

if TYPE_CHECKING:
    from tsumugi.telemetry.hooks import Inputs

__all__ = [
    "JobClient",
    "ShardHandle",
    "create_client",
    "enqueue",
    "enqueue_many",
    "env_binding",
    "shard_at",
    "shard_for",
]

# The wire input of one job: JSON-shaped, but the payload stays the caller's object until the shard
# (or the client, for several shards) checks that it encodes (ADR-0120).
_Wire = dict[str, object]

SHARD_NAMESPACE: Final = "JOB_SHARD"  # the Durable Object binding every enqueue path needs (J-200)
_PLAIN_KEYS: Final = frozenset({"binding", "payload"})
# A namespace attribute: True when ``enqueue_many`` reaches the shard in process, with the payloads as
# Python objects, so the shard's own check of a single group's payloads stands for the client's.
SHARD_CHECKS_PAYLOADS: Final = "shard_checks_payloads"


_R = TypeVar("_R")


def env_binding(env: object, name: str) -> Any:
    """``env[name]`` for a mapping, else ``env.<name>``; None when absent (treats None as absent).

    A binding is whatever the platform put there (a Durable Object namespace is a JavaScript proxy on
    Cloudflare), so its type is the caller's to state.
    """
    # J-205
    if isinstance(env, Mapping):
        return env.get(name)
    return getattr(env, name, None)


def _namespace(env: object) -> ShardNamespace:
    namespace: ShardNamespace | None = env_binding(env, SHARD_NAMESPACE)
    if namespace is None:
        raise ConfigurationError(f"{SHARD_NAMESPACE} is not configured: the environment has no such binding")
    return namespace


class _ShardSend(Protocol[_R]):
    """``ShardRpc.enqueue_many`` or ``ShardRpc.enqueue_outcomes``: one answer per input, in order."""

    def __call__(
        self, inputs: Sequence[Mapping[str, object]], settings: JsonMapping | None = None, /
    ) -> Awaitable[list[_R]]: ...


class _Route:
    """Static per-binding routing and settings, computed once (no per-enqueue config validation)."""

    __slots__ = ("config", "dynamic", "settings")

    def __init__(self, config: BindingConfig, extra: JsonMapping) -> None:
        self.config = config
        policy = config.policy
        self.dynamic = policy is not None and policy.has_override_functions
        settings: JsonObject = {**config.settings_wire(), **extra}
        self.settings: JsonObject | None = settings or None

    def settings_for(self, inputs: Sequence[Mapping[str, object]]) -> JsonObject | None:
        if not self.dynamic:
            return self.settings
        keys = {key: None for i in inputs if isinstance(key := i.get("concurrencyKey"), str)}
        # ADR-0056: function overrides are evaluated for the keys this RPC carries.
        return {**(self.settings or {}), **self.config.settings_wire(keys)}


def _answers(name: str, wires: Sequence[object], returned: list[_R]) -> list[_R]:
    """The shard's answers, one per input it was sent."""
    if len(returned) != len(wires):
        raise EnqueueError(f"shard {name} answered {len(returned)} times for {len(wires)} jobs")
    return returned


class JobClient:
    """Enqueues jobs and finds shards; the shared engine of every enqueue path."""

    # J-22, J-39

    def __init__(
        self,
        bindings: Mapping[str, BindingConfig | Mapping[str, object]] | None = None,
        on_enqueue: OnEnqueue | None = None,
        *,
        routed: bool = True,
        extra_settings: JsonMapping | None = None,
        required_keys: Mapping[str, frozenset[str]] | None = None,
        known_bindings: Iterable[str] | None = None,
        preflight: Callable[[object], None] | None = None,
    ) -> None:
        self._routed = routed
        self._on_enqueue = on_enqueue
        self._extra: JsonObject = dict(extra_settings or {})
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

    async def enqueue(
        self, env: object, input: Mapping[str, object] | None = None, /, **options: object
    ) -> str:
        """Enqueue one job; ``input`` and keyword options merge (keywords win). Returns its id."""
        item = {**input, **options} if input is not None else options
        return (await self.enqueue_many(env, [item]))[0]

    async def enqueue_many(self, env: object, inputs: Inputs) -> list[str]:
        """Enqueue many jobs, one RPC per destination shard, concurrently; ids in input order."""
        # J-39
        if telemetry.active is not None:  # ADR-0143: a tsumugi.enqueue span, its context as traceparent
            return await telemetry.active.enqueue(inputs, lambda traced: self._enqueue_many(env, traced))
        return await self._enqueue_many(env, inputs)

    async def enqueue_outcomes(self, env: object, inputs: Inputs) -> list[EnqueueOutcome]:
        """``enqueue_many`` answering what each input did: created, existing, debounced or dropped.

        A throttle that drops a job answers ``EnqueueOutcome(id=None, status="dropped")`` here, where
        ``enqueue_many`` raises ``JobDroppedError`` (ADR-0150).
        """
        if telemetry.active is not None:  # ADR-0143: the same tsumugi.enqueue span as enqueue_many
            return await telemetry.active.enqueue(inputs, lambda traced: self._outcomes(env, traced))
        return await self._outcomes(env, inputs)

    async def _outcomes(self, env: object, inputs: Inputs) -> list[EnqueueOutcome]:
        wires = await self._send(env, inputs, lambda stub: stub.enqueue_outcomes)
        return [outcome_from_wire(wire) for wire in wires]

    async def _enqueue_many(self, env: object, inputs: Inputs) -> list[str]:
        ids = await self._send(env, inputs, lambda stub: stub.enqueue_many)
        for index, job_id in enumerate(ids):
            if job_id == "":  # ADR-0150: no job, so no id to return
                key = inputs[index].get("throttle_key") or inputs[index].get("throttleKey")
                raise JobDroppedError(f"the throttle of key {key!r} dropped the job: no job was created")
        return ids

    async def _send(
        self, env: object, inputs: Inputs, pick: Callable[[ShardRpc], _ShardSend[_R]]
    ) -> list[_R]:
        """One RPC per destination shard, concurrently; the answers (ids or outcomes) in input order."""
        if self._preflight is not None:
            self._preflight(env)  # J-24: the typed paths check the environment first
        groups: dict[str, tuple[_Route, list[int], list[_Wire]]] = {}
        unchecked: list[object] = []  # payloads of plain inputs, checked below unless the shard does it
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
        if len(groups) == 1:  # every input, in input order, to one shard: its answers are the result
            name, (route, _, wires) = next(iter(groups.items()))
            return _answers(name, wires, await pick(namespace.get(name))(wires, route.settings_for(wires)))
        placed: dict[int, _R] = {}

        async def send(name: str, route: _Route, positions: list[int], wires: list[_Wire]) -> None:
            returned = await pick(namespace.get(name))(wires, route.settings_for(wires))
            placed.update(zip(positions, _answers(name, wires, returned), strict=True))

        await asyncio.gather(*(send(n, r, p, w) for n, (r, p, w) in groups.items()))
        return [placed[index] for index in range(len(inputs))]

    def _prepare(self, raw: Mapping[str, object], unchecked: list[object]) -> tuple[_Route, str, _Wire]:
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

    def shard_for(self, env: object, binding: str, partition_key: str | None = None) -> ShardHandle:
        """The shard a job of ``binding`` with ``partition_key`` goes to; no startup check."""
        # J-203a
        if self._known is not None and binding not in self._known:
            raise ConfigurationError(f"unknown binding: {binding}")  # ADR-0058, like the typed enqueue
        route = self._routes.get(binding, self._default_route)
        index = resolve_shard(validate_binding(binding), route.config.shards, partition_key)
        stub = _namespace(env).get(shard_name(binding, index))
        return ShardHandle(stub, self._extra, route.settings)  # type: ignore[abstract]  # see shard_handle


def create_client(
    bindings: Mapping[str, BindingConfig | Mapping[str, object]] | None = None,
    on_enqueue: OnEnqueue | None = None,
) -> JobClient:
    """A client that needs only ``JOB_SHARD``; ``bindings`` must mirror the main Worker's."""
    # J-200, J-201
    return JobClient(bindings, on_enqueue)


_UNTYPED: Final = JobClient(routed=False)


async def enqueue(env: object, input: Mapping[str, object]) -> str:
    """Untyped enqueue: shard 0, ``partition_key`` ignored, no settings pushed."""
    return await _UNTYPED.enqueue(env, input)


async def enqueue_many(env: object, inputs: Inputs) -> list[str]:
    """Untyped ``enqueue_many``: every job to shard 0 of its binding, no settings."""
    return await _UNTYPED.enqueue_many(env, inputs)


def shard_at(env: object, binding: str, shard: int = 0) -> ShardRpc:
    """The shard with index ``shard`` of ``binding`` (an index, not a partition key)."""
    # J-203a
    return ShardHandle(_namespace(env).get(shard_name(binding, shard)), {})  # type: ignore[abstract]  # see shard_handle


# J-203a: the package exports the index helper as ``shard_for`` (the original's top-level ``shardFor``);
# ``JobClient.shard_for`` is the other one, by partition key.
shard_for = shard_at
