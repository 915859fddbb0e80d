"""The Worker's ``env`` as the engine sees it: Tsumugi bindings wrapped in the ports' adapters.

``env.JOB_SHARD``/``RUN``/``SCHEDULER`` become namespace clients, ``TSUMUGI_DB`` a ``ports.SqlDatabase``,
``TSUMUGI_QUEUE`` a ``ports.DispatchQueue``, and any other service binding a remote performer. Vars and
secrets (``TSUMUGI_TOKEN``) are plain strings. A binding that is not configured reads as absent
(``getattr(env, name, None)`` is None), counted as "undefined or null".

The Tsumugi bindings are typed properties (``env.JOB_SHARD`` is a ``DurableObjectNamespaceClient``); any
other binding is an ``object`` for its reader to narrow.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from tsumugi.coordinator.run_ports import RunPeer
from tsumugi.ports import ShardRpc
from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.cloudflare.js_conversion import is_js_null, to_py_binding, unwrap_sdk
from tsumugi.runtimes.cloudflare.js_objects import AnalyticsEngineDataset
from tsumugi.runtimes.cloudflare.queue_producer import QueueProducer
from tsumugi.runtimes.cloudflare.rpc_stubs import DurableObjectNamespaceClient
from tsumugi.runtimes.cloudflare.service_binding import RemotePerformer

T = TypeVar("T")

METRICS_BINDING: Final = "TSUMUGI_METRICS"


def js_type_name(value: object) -> str | None:
    """The JS constructor name of a binding (``Fetcher``, ``DurableObjectNamespace``), if it has one."""
    constructor = getattr(value, "constructor", None)
    name = getattr(constructor, "name", None)
    return name if isinstance(name, str) else None


class WorkerEnv:
    """Attribute and mapping access to bindings, each adapter built once per isolate."""

    def __init__(self, env: object) -> None:
        self._raw = unwrap_sdk(env)
        self._cache: dict[str, object] = {}

    @property
    def raw(self) -> object:
        """The JS ``env`` itself, for code that needs a binding this adapter does not wrap."""
        return self._raw

    @property
    def JOB_SHARD(self) -> DurableObjectNamespaceClient:
        return self._required("JOB_SHARD", DurableObjectNamespaceClient)

    @property
    def RUN(self) -> DurableObjectNamespaceClient:
        return self._required("RUN", DurableObjectNamespaceClient)

    @property
    def SCHEDULER(self) -> DurableObjectNamespaceClient:
        return self._required("SCHEDULER", DurableObjectNamespaceClient)

    @property
    def TSUMUGI_DB(self) -> D1Database:
        return self._required("TSUMUGI_DB", D1Database)

    @property
    def TSUMUGI_QUEUE(self) -> QueueProducer:
        return self._required("TSUMUGI_QUEUE", QueueProducer)

    def adapter(self, name: str, kind: type[T]) -> T | None:
        """Binding ``name`` as the adapter ``kind`` made of it, or None when it is not bound."""
        value = self._binding(name)
        if value is None or isinstance(value, kind):
            return value
        raise TypeError(f"the binding {name} is a {type(value).__name__}, not a {kind.__name__}")

    def metrics_dataset(self) -> AnalyticsEngineDataset | None:
        """``TSUMUGI_METRICS``, the Analytics Engine dataset, or None when it is not bound."""
        if self._binding(METRICS_BINDING) is None:
            return None
        dataset: AnalyticsEngineDataset = getattr(self._raw, METRICS_BINDING)
        return dataset

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._binding(name)
        if value is None:
            raise AttributeError(name)
        return value

    def __getitem__(self, name: str) -> object:
        try:
            return getattr(self, name)
        except AttributeError:
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def get(self, name: str, default: object = None) -> object:
        return getattr(self, name, default)

    def _binding(self, name: str) -> object:
        """The adapter of binding ``name``, made once; None while it is not bound."""
        value = self._cache.get(name)
        if value is None:
            value = self._adapt(name)
            if value is not None:
                self._cache[name] = value
        return value

    def _required(self, name: str, kind: type[T]) -> T:
        value = self.adapter(name, kind)
        if value is None:
            raise AttributeError(name)
        return value

    def _adapt(self, name: str) -> object:
        # Any: a JS binding, of whatever kind wrangler bound under this name; each adapter below sees it
        # through the Protocol of its kind (js_objects).
        binding: Any = getattr(self._raw, name, None)
        if binding is None or is_js_null(binding):
            return None
        if isinstance(binding, str | int | float | bool):
            return binding
        match name:
            case "JOB_SHARD":
                return DurableObjectNamespaceClient(binding, ShardRpc)
            case "RUN":
                return DurableObjectNamespaceClient(binding, RunPeer)
            case "SCHEDULER":
                return DurableObjectNamespaceClient(binding)
            case "TSUMUGI_DB":
                return D1Database(binding)
            case "TSUMUGI_QUEUE":
                return QueueProducer(binding)
        kind = js_type_name(binding)
        if kind == "DurableObjectNamespace":
            return DurableObjectNamespaceClient(binding)
        if kind == "Fetcher":
            return RemotePerformer(binding)  # J-62: a service binding named like its performer
        return to_py_binding(binding)


# One WorkerEnv per JS env object: workerd hands every request of an isolate the same env, so adapters
# (and their meters) are built once per isolate. The WorkerEnv holds its env, so an id is never reused.
_ISOLATE_ENVS: Final[dict[int, WorkerEnv]] = {}


def worker_env_for(env: object) -> WorkerEnv:
    """The isolate's ``WorkerEnv`` for ``env`` (a raw JS env or the SDK's wrapper)."""
    raw = unwrap_sdk(env)
    found = _ISOLATE_ENVS.get(id(raw))
    if found is None or found.raw is not raw:
        found = _ISOLATE_ENVS[id(raw)] = WorkerEnv(raw)
    return found
