"""Finding the object that performs a binding's jobs on the local runtime."""
# J-61

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeGuard

from tsumugi.client import env_binding

__all__ = ["PerformersResolver", "Performs", "has_perform"]


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
