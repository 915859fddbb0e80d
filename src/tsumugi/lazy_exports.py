"""Names of a package that load their module on first use (a module ``__getattr__``, PEP 562)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_exports(namespace: dict[str, object], origins: Mapping[str, str]) -> Callable[[str], object]:
    """What the ``__getattr__`` of the module whose globals are ``namespace`` does: each name of
    ``origins`` is imported from the module it maps to on first use, and kept there."""
    module = namespace["__name__"]

    def load(name: str) -> object:
        origin = origins.get(name)
        if origin is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(import_module(origin), name)
        namespace[name] = value
        return value

    return load
