"""The ``env`` and ``ctx`` objects the local runtime hands to the app, shaped like a Worker's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from typing import Any

log = logging.getLogger("tsumugi.local")


class LocalEnv:
    """Bindings and vars as attributes (``env.JOB_SHARD``), also readable like a mapping (``env["X"]``)."""

    def __init__(self, bindings: Mapping[str, Any]) -> None:
        self.__dict__.update(bindings)

    def __getitem__(self, name: str) -> Any:
        try:
            return self.__dict__[name]
        except KeyError:
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return name in self.__dict__

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)

    def names(self) -> list[str]:
        return sorted(self.__dict__)

    def __repr__(self) -> str:
        return f"LocalEnv({', '.join(self.names())})"


class InProcessPerformer:
    """A ``remote(PerformerClass)`` served in this process: the local stand-in for its service binding.

    On Cloudflare the class runs in another Worker; ``tsumugi dev`` has no other Worker, so a marker
    that names its class is performed here, with this runtime's ``env``, unless a var of that name is set.
    """

    # J-62

    __slots__ = ("_env", "_performer")

    def __init__(self, performer: type[Any], env: LocalEnv) -> None:
        self._performer = performer
        self._env = env

    async def perform(self, payload: Any, ctx: Any) -> Any:
        return await self._performer(None, self._env).perform(payload, ctx)


def serve_remote_markers(env: LocalEnv, performers: Mapping[str, Any]) -> list[str]:
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

    def __init__(self, exports: Mapping[str, Any]) -> None:
        self.exports = dict(exports)
        self._pending: set[asyncio.Task[Any]] = set()

    def wait_until(self, work: Awaitable[Any]) -> None:
        """Keep ``work`` running after the handler returns; ``drain`` waits for it at shutdown."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._finished)

    waitUntil = wait_until

    async def drain(self) -> None:
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("tsumugi: background work failed", exc_info=task.exception())
