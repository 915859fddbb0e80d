"""The JavaScript objects the Workers adapter calls, described as Protocols (the methods it uses, no more).

workerd hands Python ``JsProxy`` objects whose surface is open; each Protocol here names the part of a
binding or runtime object this package calls, spelt as in JavaScript (``transactionSync``, ``sendBatch``).
Numbers come back as ``int`` or ``float`` (every JS number is a double), and a value whose shape is the
caller's business (a row array, a result) is ``JsValue`` until ``js_conversion`` turns it into Python data.
CPython tests satisfy the same Protocols with fakes (tests/platform/fake_workers.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, TypeAlias

JsValue: TypeAlias = object
"""A value on the JavaScript side: a ``JsProxy``, or a number, string or boolean Pyodide passes as is."""

JsNumber: TypeAlias = int | float


# --------------------------------------------------------------------------- Durable Object storage
class RawSqlCursor(Protocol):
    """``cursor.raw()``: the rows as arrays of cells."""

    def toArray(self) -> JsValue: ...


class SqlCursor(Protocol):
    """What ``sql.exec`` returns; ``destroy`` (where the runtime has it) releases it at once."""

    @property
    def rowsRead(self) -> JsNumber: ...

    @property
    def rowsWritten(self) -> JsNumber: ...

    def raw(self) -> RawSqlCursor: ...


class SqlStorage(Protocol):
    """``ctx.storage.sql``: synchronous SQLite with positional bindings."""

    def exec(self, query: str, *bindings: JsValue) -> SqlCursor: ...


class DurableObjectStorage(Protocol):
    """``ctx.storage``: SQL, ``transactionSync`` and the object's single alarm."""

    @property
    def sql(self) -> SqlStorage: ...

    def transactionSync(self, closure: JsValue) -> JsValue: ...

    def getAlarm(self) -> Awaitable[JsValue]: ...

    def setAlarm(self, scheduled_time: JsValue) -> Awaitable[JsValue]: ...

    def deleteAlarm(self) -> Awaitable[JsValue]: ...


class DurableObjectId(Protocol):
    """``ctx.id``; its ``name`` is read with ``getattr``, since an id made from a hex string has none."""


class DurableObjectState(Protocol):
    """The ``ctx`` a Durable Object is constructed with."""

    @property
    def storage(self) -> DurableObjectStorage: ...

    @property
    def id(self) -> DurableObjectId: ...


# --------------------------------------------------------------------------- Durable Object RPC
class DurableObjectRpcStub(Protocol):
    """A stub from ``namespace.get(id)``; any other method of the object is reached with ``getattr``."""

    def identify(self, name: str) -> Awaitable[JsValue]: ...


class DurableObjectNamespace(Protocol):
    """``env.JOB_SHARD`` and its kind: stubs addressed by name."""

    def idFromName(self, name: str) -> JsValue: ...

    def get(self, object_id: JsValue) -> DurableObjectRpcStub: ...


# --------------------------------------------------------------------------- D1
class D1Result(Protocol):
    """What ``all()``/``run()`` resolve to: ``results`` (row objects) and ``meta`` (counters)."""

    @property
    def results(self) -> JsValue: ...

    @property
    def meta(self) -> JsValue: ...


class D1PreparedStatement(Protocol):
    def bind(self, *values: JsValue) -> D1PreparedStatement: ...

    def all(self) -> Awaitable[D1Result]: ...

    def run(self) -> Awaitable[D1Result]: ...


class D1Binding(Protocol):
    """A D1 database binding (``TSUMUGI_DB``)."""

    def prepare(self, query: str) -> D1PreparedStatement: ...

    def batch(self, statements: JsValue) -> Awaitable[JsValue]: ...


# --------------------------------------------------------------------------- Queues
class QueueBinding(Protocol):
    """A Queue producer binding (``TSUMUGI_QUEUE``)."""

    def sendBatch(self, messages: JsValue) -> Awaitable[JsValue]: ...


class JsQueueMessage(Protocol):
    """One message of a ``MessageBatch``."""

    @property
    def body(self) -> JsValue: ...

    @property
    def id(self) -> JsValue: ...

    @property
    def attempts(self) -> JsNumber: ...

    def ack(self) -> JsValue: ...

    def retry(self) -> JsValue: ...


class MessageBatch(Protocol):
    """What the ``queue`` handler receives."""

    @property
    def messages(self) -> Iterable[JsQueueMessage]: ...


# --------------------------------------------------------------------------- other bindings
class AnalyticsEngineDataset(Protocol):
    """An Analytics Engine dataset binding (``TSUMUGI_METRICS``)."""

    def writeDataPoint(self, point: JsValue) -> JsValue: ...


class PerformerFetcher(Protocol):
    """A service binding to another Worker's ``PerformerEntrypoint``."""

    def perform(self, payload: JsValue, ctx: JsValue) -> Awaitable[JsValue]: ...


class RemoteContext(Protocol):
    """The job context a calling Worker hands a served performer (see ``service_binding``)."""

    @property
    def jobId(self) -> JsValue: ...

    @property
    def attempt(self) -> JsNumber: ...

    @property
    def deadlineAt(self) -> JsNumber: ...

    def heartbeat(self, progress: JsValue) -> Awaitable[JsValue]: ...

    def spawn(self, id: str, binding: str, payload: JsValue, options: JsValue) -> Awaitable[JsValue]: ...


# --------------------------------------------------------------------------- Pyodide's FFI
class ArrayBufferProxy(Protocol):
    """A ``JsProxy`` of an ArrayBuffer (a BLOB cell), copied out with ``to_bytes``."""

    def to_bytes(self) -> bytes: ...


class PyodideFfi(Protocol):
    """The part of ``pyodide.ffi`` the conversion module uses."""

    @property
    def jsnull(self) -> object: ...

    @property
    def JsProxy(self) -> type[ArrayBufferProxy]:
        """The class of every proxy; in a SQL row, the only cell that is one is an ArrayBuffer."""
        ...

    def to_js(self, value: object, *, dict_converter: JsValue, create_pyproxies: bool) -> JsValue: ...

    def create_once_callable(self, fn: Callable[[], object]) -> JsValue: ...

    def create_proxy(self, fn: Callable[..., object]) -> JsValue: ...
