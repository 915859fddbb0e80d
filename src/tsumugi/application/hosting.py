"""The Durable Object classes a Worker entry exports, bound to one app (ADR-0123, ADR-0161).

The seed's ``export class TsumugiRun extends tsumugi.runClass {}`` becomes
``class TsumugiRun(tsumugi.run_class): pass``. Their bases belong to the Cloudflare runtime, which sits
above this layer: it fills ``install_base_loader`` when it is imported (every Worker entry imports it for
``TsumugiJobShard`` and ``WorkerHandlers``), so the application layer never imports it and an app
defined for the embedded runtime never loads it.
"""
# J-203, F-93

from __future__ import annotations

import sys
from collections.abc import Callable

from tsumugi.errors import ConfigurationError

__all__ = ["OutsideWorkers", "hosted_class", "install_base_loader"]

BaseLoader = Callable[[str], type]  # a base class's name (``RunObject``, ...) -> the class
_base_loader: BaseLoader | None = None  # installed by the Cloudflare runtime when it is imported


class OutsideWorkers:
    """The base of a bound class where the Workers SDK cannot load (CPython): defining a subclass works, so
    an entry module imports anywhere; creating an instance says why it cannot run here."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        name = type(self).__name__
        raise ConfigurationError(
            f"{name} is a Durable Object of Python Workers and runs only inside workerd; "
            "locally, the embedded runtime (tsumugi dev) hosts runs and schedules itself"
        )


def install_base_loader(loader: BaseLoader) -> None:
    """Called by the Cloudflare runtime on import: ``loader`` gives the Durable Object base of a name.

    The loader raises ``ImportError`` where the Workers SDK cannot load.
    """
    global _base_loader
    _base_loader = loader


def hosted_class(app: object, base_name: str, class_name: str) -> type:
    """A subclass of the runtime's ``base_name`` (``RunObject``, ``SchedulerObject``) with ``app`` set."""
    base: type = OutsideWorkers
    if _base_loader is not None:
        try:
            base = _base_loader(base_name)
        except ImportError:  # the Workers SDK imports only inside workerd
            base = OutsideWorkers
    elif sys.platform == "emscripten":  # inside Pyodide, yet the runtime was never imported
        raise ConfigurationError(
            f"{class_name} needs the Cloudflare runtime: import tsumugi.runtimes.cloudflare in the Worker "
            f"entry before reading {'run_class' if base_name == 'RunObject' else 'scheduler_class'}"
        )
    doc = f"``{class_name}`` of this app, for the Worker entry to export (wrangler ``class_name``)."
    return type(class_name, (base,), {"app": app, "__doc__": doc, "__module__": __name__})
