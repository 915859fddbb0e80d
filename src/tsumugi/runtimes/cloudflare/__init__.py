"""The Cloudflare runtime: the only package that imports ``js``, ``pyodide`` or ``workers`` (STYLE.md).

The classes a Worker entry exports (``TsumugiJobShard``, ``RunObject``, ``SchedulerObject``,
``WorkerHandlers``, ``PerformerEntrypoint``) subclass the ``workers`` SDK, which only imports inside the
Workers runtime; they are loaded on first access, so the adapters below them (SQL, alarm, Queue, D1,
conversion) also import in plain Pyodide and, with fake bindings, in CPython tests (ADR-0084).
``WorkerEnv`` wraps a Worker's ``env`` for engine code, e.g. ``create_client(...).enqueue(WorkerEnv(env),
...)`` in an enqueue-only Worker whose ``JOB_SHARD`` points at the main Worker.
"""
# J-200

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tsumugi.application.hosting import install_base_loader
from tsumugi.runtimes.cloudflare.service_binding import RemotePerformer, serve_perform
from tsumugi.runtimes.cloudflare.worker_env import WorkerEnv
from tsumugi.runtimes.cloudflare.worker_logging import configure_worker_logging

if TYPE_CHECKING:  # loaded on first access at run time (below); the type checker sees the classes
    from tsumugi.runtimes.cloudflare.durable_objects import TsumugiJobShard
    from tsumugi.runtimes.cloudflare.flow_objects import RunObject, SchedulerObject
    from tsumugi.runtimes.cloudflare.worker_entry import PerformerEntrypoint, WorkerEntrypoint, WorkerHandlers

configure_worker_logging()

__all__ = [
    "PerformerEntrypoint",
    "RemotePerformer",
    "RunObject",
    "SchedulerObject",
    "TsumugiJobShard",
    "WorkerEntrypoint",
    "WorkerEnv",
    "WorkerHandlers",
    "serve_perform",
]

_LAZY_EXPORTS = {
    "PerformerEntrypoint": "tsumugi.runtimes.cloudflare.worker_entry",
    "RunObject": "tsumugi.runtimes.cloudflare.flow_objects",
    "SchedulerObject": "tsumugi.runtimes.cloudflare.flow_objects",
    "TsumugiJobShard": "tsumugi.runtimes.cloudflare.durable_objects",
    "WorkerEntrypoint": "tsumugi.runtimes.cloudflare.worker_entry",
    "WorkerHandlers": "tsumugi.runtimes.cloudflare.worker_entry",
}


def __getattr__(name: str) -> object:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _hosted_base(name: str) -> type:
    """``RunObject`` or ``SchedulerObject``, for ``tsumugi.run_class`` and ``scheduler_class`` (ADR-0161)."""
    base = __getattr__(name)  # ImportError where the Workers SDK cannot load
    if not isinstance(base, type):
        raise TypeError(f"{name} is not a class")
    return base


install_base_loader(_hosted_base)
