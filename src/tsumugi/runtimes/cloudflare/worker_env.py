"""The Worker's ``env`` as the engine sees it: Tsumugi bindings wrapped in the ports' adapters.

``env.JOB_SHARD``/``RUN``/``SCHEDULER`` become namespace clients, ``TSUMUGI_DB`` a ``ports.SqlDatabase``,
``TSUMUGI_QUEUE`` a ``ports.DispatchQueue``, and any other service binding a remote performer. Vars and
secrets (``TSUMUGI_TOKEN``) are plain strings. A binding that is not configured reads as absent
(``getattr(env, name, None)`` is None), counted as "undefined or null".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from tsumugi.coordinator.run_ports import RunPeer
from tsumugi.ports import ShardRpc
from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.cloudflare.js_conversion import is_js_null, to_py_value, unwrap_sdk
from tsumugi.runtimes.cloudflare.queue_producer import QueueProducer
from tsumugi.runtimes.cloudflare.rpc_stubs import DurableObjectNamespaceClient
from tsumugi.runtimes.cloudflare.service_binding import RemotePerformer

_ADAPTERS: Final[dict[str, Callable[[Any], Any]]] = {
    "JOB_SHARD": lambda binding: DurableObjectNamespaceClient(binding, ShardRpc),
    "RUN": lambda binding: DurableObjectNamespaceClient(binding, RunPeer),
    "SCHEDULER": lambda binding: DurableObjectNamespaceClient(binding),
    "TSUMUGI_DB": D1Database,
    "TSUMUGI_QUEUE": QueueProducer,
}


def js_type_name(value: Any) -> str | None:
    """The JS constructor name of a binding (``Fetcher``, ``DurableObjectNamespace``), if it has one."""
    constructor = getattr(value, "constructor", None)
    name = getattr(constructor, "name", None)
    return name if isinstance(name, str) else None


class WorkerEnv:
    """Attribute and mapping access to bindings, each adapter built once per isolate."""

    def __init__(self, env: Any) -> None:
        self._raw = unwrap_sdk(env)
        self._cache: dict[str, Any] = {}

    @property
    def raw(self) -> Any:
        """The JS ``env`` itself, for code that needs a binding this adapter does not wrap."""
        return self._raw

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._cache:
            value = self._adapt(name, getattr(self._raw, name, None))
            if value is None:
                raise AttributeError(name)
            self._cache[name] = value
        return self._cache[name]

    def __getitem__(self, name: str) -> Any:
        try:
            return getattr(self, name)
        except AttributeError:
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name, default)

    @staticmethod
    def _adapt(name: str, binding: Any) -> Any:
        if is_js_null(binding):
            return None
        if isinstance(binding, str | int | float | bool):
            return binding
        if name in _ADAPTERS:
            return _ADAPTERS[name](binding)
        kind = js_type_name(binding)
        if kind == "DurableObjectNamespace":
            return DurableObjectNamespaceClient(binding)
        if kind == "Fetcher":
            return RemotePerformer(binding)  # J-62: a service binding named like its performer
        return to_py_value(binding)


# One WorkerEnv per JS env object: workerd hands every request of an isolate the same env, so adapters
# (and their meters) are built once per isolate. The WorkerEnv holds its env, so an id is never reused.
_ISOLATE_ENVS: Final[dict[int, WorkerEnv]] = {}


def worker_env_for(env: Any) -> WorkerEnv:
    """The isolate's ``WorkerEnv`` for ``env`` (a raw JS env or the SDK's wrapper)."""
    raw = unwrap_sdk(env)
    found = _ISOLATE_ENVS.get(id(raw))
    if found is None or found.raw is not raw:
        found = _ISOLATE_ENVS[id(raw)] = WorkerEnv(raw)
    return found
