"""Protocols the runtimes implement and the engine is written against.

One engine runs on both runtimes (STYLE.md): shard-local SQL (``SqlExecutor``), the alarm, the dispatch
queue, the read model's database and writer, and the coordinators' RPC surfaces are reached only through
these protocols. ``runtimes/local`` implements them with sqlite3 files and asyncio; ``runtimes/cloudflare``
with Durable Object storage, Queues and D1.

They are not the only protocols engine code sees. Narrower ones live beside the code that asks for them:
a run's peers and run projection (``coordinator/run_ports.py``), the shard's metrics writer
(``coordinator/context.py``), what the REST app asks of the application serving it
(``api/options.py``), and ``clock.Clock``. Those are implemented by engine or application code, or by a
runtime that matches them by shape.

``ShardRpc`` is the job shard's RPC surface, declared once: generic stubs install one forwarder per name
``rpc_method_names`` lists. Wire shapes (dicts passed across these ports) keep the original camelCase keys.
"""
# J-1

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeGuard, TypeVar, cast

from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue

T = TypeVar("T")

SqlValue = None | int | float | str | bytes
Row = tuple[SqlValue, ...]


# --------------------------------------------------------------------------- shard-local storage
class SqlExecutor(Protocol):
    """Synchronous SQL on the coordinator's own SQLite (CPython sqlite3 or Durable Object SQL).

    Durable Object SQL is synchronous, so every coordinator method that touches storage runs its
    statements without awaiting in between; that is what makes check-then-insert atomic.
    """

    # J-4

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        """Run one statement and return all its rows (an empty list for writes)."""
        ...

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        """Run one statement once per parameter row."""
        ...

    def transaction(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` atomically: all of its statements commit together or none do."""
        ...


class AlarmPort(Protocol):
    """The coordinator's single durable alarm (a Durable Object alarm, or a persisted local timer)."""

    async def get_alarm(self) -> int | None: ...

    async def set_alarm(self, at_ms: int) -> None: ...

    async def delete_alarm(self) -> None: ...


class ReportsLater(Protocol):
    """A shard stub that takes a report without its caller waiting (a local shard's, ADR-0167).

    ``report_later`` returns False, taking nothing, when the report must be sent with ``report``.
    ``answer`` is told exactly once: None once the report was applied, else why it was not.
    """

    def report_later(
        self, job_id: str, outcome: Mapping[str, object], answer: Callable[[BaseException | None], None]
    ) -> bool: ...


def reports_later(shard: ShardRpc) -> ReportsLater | None:
    """``shard`` when its class defines ``report_later``. A Durable Object stub answers any attribute
    name (as a remote call), so only the class is asked, never the stub."""
    return cast("ReportsLater", shard) if hasattr(type(shard), "report_later") else None


# --------------------------------------------------------------------------- queue
class DispatchQueue(Protocol):
    """The producer side of TSUMUGI_QUEUE. At most 100 messages per call."""

    # J-161

    async def send_batch(self, messages: Sequence[JsonObject]) -> None: ...


class EncodedDispatchQueue(DispatchQueue, Protocol):
    """A dispatch queue that keeps each message as JSON text (the local runtime's, ADR-0167).

    The shard writes that text itself, around the payload's stored JSON, rather than decoding the
    payload into a message that the queue would encode again.
    """

    async def send_encoded(self, bodies: Sequence[str]) -> None:
        """Like ``send_batch``, of messages already encoded as JSON objects, and of any number of them:
        this queue is the runtime's own, with no per-call limit."""
        ...


def takes_encoded(queue: DispatchQueue) -> TypeGuard[EncodedDispatchQueue]:
    """Whether ``queue``'s class defines ``send_encoded``. Only the class is asked: a platform binding
    may answer any attribute name."""
    return hasattr(type(queue), "send_encoded")


class QueueMessage(Protocol):
    """One delivered queue message (the consumer side)."""

    @property
    def body(self) -> JsonValue:
        """The message's JSON as the platform delivered it; the consumer narrows it to a dispatch message."""
        ...

    @property
    def attempts(self) -> int: ...

    def ack(self) -> None: ...

    def retry(self) -> None: ...


# --------------------------------------------------------------------------- read model (D1-shaped)
class SqlDatabase(Protocol):
    """An asynchronous SQL database shaped like D1: the read model lives here.

    Rows come back as dicts keyed by column name. ``batch`` runs its statements atomically.
    """

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]: ...

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        """Run a write and return the number of rows it changed."""
        ...

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None: ...


class ReadModelWriter(Protocol):
    """Where a coordinator projects its outbox."""

    # J-192

    async def upsert_jobs(self, snapshots: Sequence[JsonMapping]) -> None:
        """Upsert job snapshots (D1 ``job`` columns), guarded by ``seq``."""
        # J-193
        ...


# --------------------------------------------------------------------------- shard RPC
class ShardRpc(Protocol):
    """What a job shard answers (the TsumugiJobShard Durable Object's RPC surface).

    Every argument and result is plain JSON-shaped data with the original camelCase keys, so the same
    calls cross a Durable Object RPC boundary unchanged.
    """

    # J-22

    async def enqueue_many(
        self, inputs: Sequence[Mapping[str, object]], settings: JsonMapping | None = None
    ) -> list[str]:
        """The ids in input order; a job a throttle dropped has the empty id (ADR-0150)."""
        ...

    async def enqueue_outcomes(
        self, inputs: Sequence[Mapping[str, object]], settings: JsonMapping | None = None
    ) -> list[JsonObject]:
        """``enqueue_many`` as ``{id, status, runAfter}`` entries (ADR-0149, ADR-0150)."""
        ...

    async def report(self, job_id: str, outcome: Mapping[str, object]) -> None:
        """Record an attempt's outcome.

        ``outcome`` is ``{ok: true, result, spawns?, attempt?}`` or ``{ok: false, error?, retry?, attempt?}``.
        """
        # J-119
        ...

    async def heartbeat(self, job_id: str, progress: object = None, attempt: int | None = None) -> JsonObject:
        """Returns ``{ok: bool, cancelRequested: bool}``."""
        # J-66, J-69a
        ...

    async def claim(self, job_id: str) -> bool: ...

    async def expire(self, job_id: str) -> bool: ...

    async def retry(self, job_id: str) -> JsonObject: ...

    async def cancel(self, job_id: str) -> JsonObject: ...

    async def reschedule(
        self,
        job_id: str,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: float | None = None,
    ) -> JsonObject: ...

    async def mutate_many(self, action: str, job_ids: Sequence[str]) -> JsonObject: ...

    async def configure(self, settings: JsonMapping) -> JsonObject: ...

    async def update_policy(self, patch: JsonMapping, settings: JsonMapping | None = None) -> JsonObject:
        """Merge ``patch`` and pin; an unpinned shard merges onto ``settings``, the static ones."""
        # J-176
        ...

    async def reset_policy(self, settings: JsonMapping | None = None) -> JsonObject: ...

    async def diagnostics(self) -> JsonObject: ...

    async def state_of(self, job_id: str) -> str | None: ...


class ShardNamespace(Protocol):
    """``env.JOB_SHARD``: finds the shard with a given Durable Object name (``<binding>#<n>``)."""

    # J-17

    def get(self, name: str) -> ShardRpc: ...


class RunRpc(Protocol):
    """What a run coordinator answers (the TsumugiRun Durable Object). Flows fill in the rest."""

    # F-28

    async def notify(self, events: Sequence[JsonObject]) -> None:
        """Terminal job events ``{nodeId, jobId, state, result, error, spawns?}``."""
        # F-45
        ...


class RunNamespace(Protocol):
    """``env.RUN``: finds the run coordinator for a run id."""

    def get(self, run_id: str) -> RunRpc: ...


class PerformerResolver(Protocol):
    """Finds the object that performs a binding's jobs: a local export or a service binding."""

    # J-61

    def resolve(self, binding: str, env: object) -> object | None: ...


def rpc_method_names(protocol: type) -> tuple[str, ...]:
    """The public methods a protocol declares, its protocol bases' included, in declaration order.

    A stub that forwards calls generically installs one forwarder per name, so a method added to the
    protocol reaches every stub without an edit there.
    """
    names: dict[str, None] = {}
    for cls in reversed(protocol.__mro__):
        if cls is object or cls is Protocol or not getattr(cls, "_is_protocol", False):
            continue
        names.update(
            (name, None)
            for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_")
        )
    return tuple(names)
