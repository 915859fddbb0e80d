"""Finding the object that performs a binding's jobs on the local runtime."""
# J-61

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tsumugi.client import env_binding

__all__ = ["PerformersResolver", "has_perform"]


def has_perform(candidate: Any) -> bool:
    """True when ``candidate`` exposes a callable ``perform`` (``invalid``)."""
    # J-61, J-205
    return candidate is not None and callable(getattr(candidate, "perform", None))


class PerformersResolver:
    """Resolves from the ``performers`` map, then from ``env`` (a service binding).

    A class in the map is instantiated with ``(ctx, env)``; a ``remote()`` marker or an
    unknown name falls through to ``env[binding]``.
    """

    __slots__ = ("_ctx", "_performers")

    def __init__(self, performers: Mapping[str, Any], ctx: Any = None) -> None:
        self._performers = performers
        self._ctx = ctx

    def resolve(self, binding: str, env: Any) -> Any | None:
        entry = self._performers.get(binding)
        if isinstance(entry, type):
            return entry(self._ctx, env)
        candidate = env_binding(env, binding)
        return candidate if has_perform(candidate) else None
