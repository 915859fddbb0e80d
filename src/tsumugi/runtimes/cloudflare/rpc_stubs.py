"""Durable Object namespaces seen as ``ports.ShardNamespace``/``ports.RunNamespace``.

A call on a stub crosses the Durable Object RPC boundary: arguments go out through ``to_js_value`` and
results come back through ``to_py_value``, so engine code sees plain JSON-shaped data on both runtimes.
The same stubs serve an enqueue-only Worker whose ``JOB_SHARD`` points at another script.
"""
# J-17, F-28, J-200

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Final

from tsumugi.core.json_types import JsonValue
from tsumugi.runtimes.cloudflare.js_conversion import to_js_value, to_py_value
from tsumugi.runtimes.cloudflare.js_objects import DurableObjectNamespace, DurableObjectRpcStub, JsValue

# The text of the refusal of a Durable Object that does not know its name yet (durable_objects.py).
UNNAMED_MARKER: Final = "UnnamedObjectError"


class DurableObjectStub:
    """Any coordinator's RPC surface: ``await stub.enqueue_many(inputs, settings)`` and so on.

    Method names are the Python coordinator's own (mapped from the original's names); every argument
    is converted, ``None`` included, so optional positional arguments keep their places. Results come
    back as JSON through ``to_py_value``; what they mean is the port the stub is used as (``ShardRpc``,
    ``RunPeer``), so a method is typed by that port, not here.
    """

    __slots__ = ("_protocol", "_stub", "name")

    def __init__(self, stub: DurableObjectRpcStub, name: str, protocol: type | None = None) -> None:
        self._stub = stub
        self._protocol = protocol
        self.name = name

    # Any: the stub stands for whichever port it is used as; each method's result is that port's answer.
    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)
        remote: Callable[..., Awaitable[JsValue]] = getattr(self._stub, method)

        positional = self._positional

        stub = self._stub
        name = self.name

        async def call(*args: object, **kwargs: object) -> JsonValue:
            js_args = [to_js_value(arg) for arg in positional(method, args, kwargs)]
            try:
                return to_py_value(await remote(*js_args))
            except Exception as error:
                if UNNAMED_MARKER not in str(error):
                    raise
            await stub.identify(name)  # the object was reached without its name: tell it, then retry
            return to_py_value(await remote(*js_args))

        return call

    def _positional(self, method: str, args: tuple[object, ...], kwargs: dict[str, object]) -> list[object]:
        """RPC takes positional arguments only: keyword arguments are placed by the port's signature."""
        if not kwargs:
            return list(args)
        declared = getattr(self._protocol, method, None)
        if declared is None:
            raise TypeError(f"{method}() crosses RPC with positional arguments only")
        bound = inspect.signature(declared).bind(None, *args, **kwargs)
        bound.apply_defaults()
        return list(bound.args[1:])


class DurableObjectNamespaceClient:
    """``env.JOB_SHARD`` / ``env.RUN`` / ``env.SCHEDULER``: stubs addressed by name (``idFromName``)."""

    __slots__ = ("_namespace", "_protocol")

    def __init__(self, namespace: DurableObjectNamespace, protocol: type | None = None) -> None:
        self._namespace = namespace
        self._protocol = protocol

    def get(self, name: str) -> DurableObjectStub:
        stub = self._namespace.get(self._namespace.idFromName(name))
        return DurableObjectStub(stub, name, self._protocol)
