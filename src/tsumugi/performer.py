"""The performer API: what job code sees, and how a binding finds its performer.

Imports nothing of the shard, SQL or HTTP.
"""
# J-8, 10.8

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Generic, Literal, Protocol, TypeAlias, TypeGuard

from typing_extensions import TypeVar

from tsumugi.client import env_binding
from tsumugi.clock import Clock, SystemClock
from tsumugi.core.config import ExponentialBackoff, FixedBackoff
from tsumugi.core.flow.ids import validate_node_id
from tsumugi.core.json_types import JsonObject
from tsumugi.core.options import to_wire_input
from tsumugi.errors import InvalidPerformerError

__all__ = [
    "DEFAULT_OPTION_NAMES",
    "HeartbeatResult",
    "JobContext",
    "Performer",
    "PerformersResolver",
    "Performs",
    "RemoteMarker",
    "SpawnRequest",
    "describe_entry",
    "has_perform",
    "is_remote",
    "performer_defaults",
    "performer_defaults_wire",
    "remote",
]

# The type parameters of Performer; a class that gives none is Performer[Any, Any] (ADR-0140), so that
# `class Hello(Performer)` may annotate `perform` with its own payload and result types under --strict.
Payload = TypeVar("Payload", default=Any)
Result = TypeVar("Result", default=Any)

# ADR-0141: the enqueue options a performer class may default; the caller's value always wins.
DEFAULT_OPTION_NAMES: Final = ("max_attempts", "timeout_ms", "backoff", "guarantee", "priority")


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """What ``ctx.heartbeat()`` answers."""

    # J-69a

    cancel_requested: bool = False


@dataclass(frozen=True, slots=True)
class SpawnRequest:
    """A child node a flow performer asked for with ``ctx.spawn`` (shipped with a success report)."""

    id: str
    binding: str
    payload: object
    options: dict[str, object] = field(default_factory=dict)


# Progress is a number in [0, 1]; any other value means "no progress" and never fails the call.
HeartbeatFn: TypeAlias = Callable[[object], Awaitable[HeartbeatResult]]


class JobContext:
    """Per-attempt context handed to ``perform``."""

    __slots__ = ("_clock", "_heartbeat", "attempt", "deadline_at", "job_id", "spawns", "traceparent")

    def __init__(
        self,
        *,
        job_id: str,
        attempt: int,
        deadline_at: int,
        heartbeat: HeartbeatFn | None = None,
        traceparent: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.deadline_at = deadline_at  # fixed for the attempt (J-68)
        self.traceparent = traceparent
        self.spawns: list[SpawnRequest] = []
        self._heartbeat = heartbeat
        self._clock: Clock = clock or SystemClock()

    @property
    def idempotency_key(self) -> str:
        """Equals the job id; stable across retries."""
        # J-21
        return self.job_id

    async def heartbeat(self, progress: object = None) -> HeartbeatResult:
        """Report liveness and optional progress in [0, 1]; never raises."""
        # J-64, J-65
        if self._heartbeat is None:
            return HeartbeatResult()
        return await self._heartbeat(progress)

    def spawn(
        self, id: str, binding: str, payload: object, options: Mapping[str, object] | None = None
    ) -> None:
        """Ask for a child node of the current flow node (flows only; dropped if the attempt fails).

        A bad ``id`` raises ``InvalidFlowError`` here, failing this attempt like any error, rather than
        the run's bookkeeping later.
        """
        # F-57, F-3
        validate_node_id(id)
        self.spawns.append(SpawnRequest(id, binding, payload, dict(options or {})))

    def remaining_ms(self) -> int:
        """Milliseconds left before ``deadline_at`` (0 or less means: stop now)."""
        # J-75
        return self.deadline_at - self._clock.now()

    def timeout(self) -> asyncio.Timeout:
        """``async with ctx.timeout():`` raises ``TimeoutError`` in the block at ``deadline_at``.

        A deadline already past expires at the block's first await. Heartbeats do not move it.
        """
        # J-75, J-68
        return asyncio.timeout(max(0, self.remaining_ms()) / 1000)


class Performer(Generic[Payload, Result]):
    """Base class of job code. Subclass it and implement ``async def perform(self, payload, ctx)``.

    ``class SendMail(Performer[MailIn, MailOut])`` declares the payload and result types (the
    annotations of ``perform`` do too): pydantic models, dataclasses, TypedDicts or JSON types. A payload
    is checked against its type when the job is enqueued and arrives decoded into it; a returned model or
    dataclass is stored as its JSON. Without types, payloads and results are plain JSON values.

    Class attributes set the job options of every enqueue that does not give its own:
    ``max_attempts``, ``timeout_ms``, ``backoff``, ``guarantee`` and ``priority``. With
    ``cancel_on_timeout = True`` the attempt's coroutine is cancelled when its timeout fires; by default
    it runs on and its outcome is discarded. ``requires`` names the keys every enqueue must carry, e.g.
    ``requires = frozenset({"concurrency_key"})``.
    """

    requires: ClassVar[frozenset[str]] = frozenset()
    max_attempts: ClassVar[int | None] = None
    timeout_ms: ClassVar[int | None] = None
    backoff: ClassVar[FixedBackoff | ExponentialBackoff | Mapping[str, object] | None] = None
    guarantee: ClassVar[Literal["at-least-once", "at-most-once"] | None] = None
    priority: ClassVar[float | None] = None
    cancel_on_timeout: ClassVar[bool] = False

    # Any: the platform's execution context and the Worker env (JS proxies on Cloudflare, a LocalEnv
    # locally); job code reads its own bindings off env, which no static type here can name.
    def __init__(self, ctx: Any = None, env: Any = None) -> None:
        self.ctx = ctx
        self.env = env

    async def perform(self, payload: Payload, ctx: JobContext) -> Result:
        raise NotImplementedError(f"{type(self).__name__}.perform is not implemented")


def performer_defaults(performer: type[object]) -> dict[str, object]:
    """The job options ``performer`` sets as class attributes, by snake_case name (None means unset)."""
    found: dict[str, object] = {}
    for name in DEFAULT_OPTION_NAMES:
        value = getattr(performer, name, None)
        if value is not None:
            found[name] = value
    return found


def performer_defaults_wire(performer: type[object]) -> JsonObject:
    """The class defaults as the camelCase options a node job or spawn carries; ``EnqueueError`` if bad."""
    defaults = performer_defaults(performer)
    if not defaults:
        return {}
    wire = to_wire_input({"binding": "defaults", "payload": None, **defaults})  # J-29 rules
    return {key: value for key, value in wire.items() if key not in ("binding", "payload")}


class RemoteMarker:
    """Marks a binding whose performer lives in another Worker behind a service binding."""

    # J-62

    __slots__ = ("performer",)

    # Any: the marker stands for a performer class of any payload and result types.
    def __init__(self, performer: type[Performer[Any, Any]] | None) -> None:
        if performer is not None and not (isinstance(performer, type) and issubclass(performer, Performer)):
            raise InvalidPerformerError(
                f"remote() takes a Performer subclass or nothing, got {describe_entry(performer)}"
            )
        self.performer = performer

    def __repr__(self) -> str:
        name = self.performer.__name__ if self.performer else "?"
        return f"remote({name})"


def remote(performer: type[Performer[Any, Any]] | None = None) -> RemoteMarker:
    """The ``performers`` entry for a performer served by another Worker."""
    # J-62
    return RemoteMarker(performer)


def is_remote(entry: object) -> bool:
    """True for what ``remote(...)`` returns."""
    return isinstance(entry, RemoteMarker)


def describe_entry(entry: object) -> str:
    """How an error names something given where a Performer subclass belongs."""
    if isinstance(entry, type):
        return f"the class {entry.__name__}"
    if isinstance(entry, Performer):
        return f"an instance of {type(entry).__name__}"
    if callable(entry):
        return f"the function {getattr(entry, '__name__', repr(entry))}"
    return f"a {type(entry).__name__}"


# ---------------------------------------------------------------------- who performs a binding (J-61)
class Performs(Protocol):
    """What the consumer calls: a ``perform(payload, ctx)``, sync or async, whose types it cannot know.

    A ``Performer`` subclass, a service binding's stub, any object with a callable ``perform``.
    """

    @property
    def perform(self) -> Callable[..., object]: ...


def has_perform(candidate: object) -> TypeGuard[Performs]:
    """True when ``candidate`` exposes a callable ``perform`` (``invalid``)."""
    # J-61, J-205
    return candidate is not None and callable(getattr(candidate, "perform", None))


class PerformersResolver:
    """Resolves from the ``performers`` map, then from ``env`` (a service binding).

    A class in the map is instantiated with ``(ctx, env)``; a ``remote()`` marker or an
    unknown name falls through to ``env[binding]``.
    """

    __slots__ = ("_ctx", "_performers")

    def __init__(self, performers: Mapping[str, object], ctx: object = None) -> None:
        self._performers = performers
        self._ctx = ctx

    def resolve(self, binding: str, env: object) -> object | None:
        entry = self._performers.get(binding)
        if isinstance(entry, type):
            instance: object = entry(self._ctx, env)
            return instance
        candidate: object = env_binding(env, binding)
        return candidate if has_perform(candidate) else None
