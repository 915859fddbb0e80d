"""The ``env`` and ``ctx`` objects the local runtime hands to the app, shaped like a Worker's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final, Literal, Protocol, overload

from tsumugi.coordinator.run_ports import RunPeer, RunPeers
from tsumugi.performer import JobContext
from tsumugi.ports import RunNamespace, RunRpc
from tsumugi.runtimes.local.shard_namespace import LocalNamespace

log = logging.getLogger("tsumugi.local")

# The bindings LocalRuntime always makes a LocalNamespace of (a namespace of coordinators).
_NAMESPACE_BINDINGS: Final = frozenset({"RUN", "SCHEDULER"})


class RunStub(RunPeer, RunRpc, Protocol):
    """One run coordinator behind ``env.RUN``: what other runs call, and what a job shard calls."""

    async def notify(self, events: Sequence[Mapping[str, object]]) -> None: ...


class RunNamespaceBinding(RunPeers, RunNamespace, Protocol):
    """``env.RUN``: both the run coordinators' peers and the job shards' view of them."""

    def get(self, run_id: str) -> RunStub: ...


class LocalEnv:
    """Bindings and vars as attributes (``env.JOB_SHARD``), also readable like a mapping (``env["X"]``).

    A binding's type is what the runtime put there, so reads give ``object``; ``RUN`` reads as the run
    namespace it always is.
    """

    def __init__(self, bindings: Mapping[str, object]) -> None:
        self.__dict__.update(bindings)

    @overload
    def __getitem__(self, name: Literal["RUN"]) -> RunNamespaceBinding: ...

    @overload
    def __getitem__(self, name: str) -> object: ...

    def __getitem__(self, name: str) -> object:
        try:
            value: object = self.__dict__[name]
        except KeyError:
            raise KeyError(name) from None
        return _checked(name, value)

    def __contains__(self, name: object) -> bool:
        return name in self.__dict__

    @overload
    def get(self, name: Literal["RUN"], default: None = None) -> RunNamespaceBinding | None: ...

    @overload
    def get(self, name: str, default: object = None) -> object: ...

    def get(self, name: str, default: object = None) -> object:
        value: object = self.__dict__.get(name, default)
        return _checked(name, value)

    def names(self) -> list[str]:
        return sorted(self.__dict__)

    def __repr__(self) -> str:
        return f"LocalEnv({', '.join(self.names())})"


def _checked(name: str, value: object) -> object:
    """``value`` of binding ``name``, refused if a namespace binding holds something else."""
    if name in _NAMESPACE_BINDINGS and value is not None and not isinstance(value, LocalNamespace):
        raise TypeError(f"the binding {name} is a {type(value).__name__}, not a coordinator namespace")
    return value


class _ServedPerformer(Protocol):
    """A performer instance: an async ``perform`` whose payload type is its own."""

    @property
    def perform(self) -> Callable[..., Awaitable[object]]: ...


class InProcessPerformer:
    """A ``remote(PerformerClass)`` served in this process: the local stand-in for its service binding.

    On Cloudflare the class runs in another Worker; ``tsumugi dev`` has no other Worker, so a marker
    that names its class is performed here, with this runtime's ``env``, unless a var of that name is set.
    """

    # J-62

    __slots__ = ("_env", "_performer")

    def __init__(self, performer: Callable[[None, LocalEnv], _ServedPerformer], env: LocalEnv) -> None:
        self._performer = performer
        self._env = env

    async def perform(self, payload: object, ctx: JobContext) -> object:
        return await self._performer(None, self._env).perform(payload, ctx)


def serve_remote_markers(env: LocalEnv, performers: Mapping[str, object]) -> list[str]:
    """Bind an ``InProcessPerformer`` for each remote marker that names its class; returns their names."""
    served: list[str] = []
    for binding, entry in performers.items():
        performer = getattr(entry, "performer", None)
        if isinstance(entry, type) or not isinstance(performer, type) or binding in env:
            continue
        env.__dict__[binding] = InProcessPerformer(performer, env)
        served.append(binding)
    return served


class LocalExecutionContext:
    """A Worker's ``ctx``: ``exports`` (the app module's top-level exports) and ``wait_until``."""

    # J-61

    def __init__(self, exports: Mapping[str, object]) -> None:
        self.exports = dict(exports)
        self._pending: set[asyncio.Future[object]] = set()

    def wait_until(self, work: Awaitable[object]) -> None:
        """Keep ``work`` running after the handler returns; ``drain`` waits for it at shutdown."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._finished)

    waitUntil = wait_until

    async def drain(self) -> None:
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def _finished(self, task: asyncio.Future[object]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("tsumugi: background work failed", exc_info=task.exception())
