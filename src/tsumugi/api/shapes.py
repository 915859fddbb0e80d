"""The REST bodies as the server builds them: typed dicts, shaped by hand, printed by ``wire_format``.

The server needs no validation library to answer: every body it sends is built here from rows and
coordinator answers it already trusts, so shaping means choosing the wire fields in their wire order and
dropping the rest. That keeps the REST stack importable where pydantic is not (a Python Worker on
Pyodide, ADR-0128). ``tsumugi.api.models`` declares the same bodies as pydantic models for the OpenAPI
document and the REST client; ``tests/api/test_shapes.py`` keeps the two field for field.

pydantic reads these shapes in that test and cannot resolve the recursive ``JsonValue`` alias, so a field
holding any JSON value is ``object`` and a JSON object passed through is ``Mapping[str, object]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypeGuard, TypeVar, cast

from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11 (tests/api/test_shapes.py)

JobStateName = Literal["SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"]
Number = int | float  # JS numbers: integral values print without a fraction (wire_format)
Shape = TypeVar("Shape")


class JobSummary(TypedDict):
    id: str
    binding: str
    state: JobStateName
    priority: Number
    attempts: int
    max_attempts: int
    created_at: int
    updated_at: int
    dispatched_at: int | None
    retryable: bool


class AttemptRecord(TypedDict):
    attempt: int
    state: str
    started_at: int | None
    finished_at: int
    error: str | None


class JobDetail(JobSummary):
    concurrency_key: str | None
    unique_key: str | None
    guarantee: Literal["at-least-once", "at-most-once"]
    run_after: int | None
    progress: float | None
    payload: str
    result: str | None
    attempts_log: list[AttemptRecord]  # stored entries keep any extra keys (A-36: job_id)


class JobList(TypedDict):
    jobs: list[JobSummary]
    total: int


class JobDetailResponse(TypedDict):
    job: JobDetail


class Created(TypedDict):
    id: str


class BulkCount(TypedDict):
    """ADR-0151: a dry run of ``POST /api/bulk``: how many jobs the action would reach."""

    matched: int


class BulkProgress(TypedDict):
    """ADR-0151: a bulk action over a filter, as ``POST /api/bulk`` and ``GET /api/bulk/{id}`` give it."""

    id: str
    action: str
    state: str
    filter: Mapping[str, object]  # the filter as given
    matched: int
    done: int
    failed: int
    remaining: int
    createdAt: int
    updatedAt: int


class Debounced(TypedDict):
    """ADR-0149: the enqueue went into a waiting job with the same debounce key."""

    id: str
    debounced: bool
    runAfter: int | None


class Dropped(TypedDict):
    """ADR-0150: a throttle dropped the job; ``runAfter`` is when its key next has a free slot."""

    id: None
    dropped: bool
    runAfter: int | None


class BulkFailure(TypedDict):
    id: str
    reason: Literal["invalid-state", "gone", "invalid-id"]


class BulkResult(TypedDict):
    ok: list[str]
    failed: list[BulkFailure]
    remaining: int


class Stats(TypedDict):
    byState: dict[str, int]
    oldestScheduledMs: int | None


class BlockedFlags(TypedDict):
    capacity: bool
    tokens: bool
    perKey: bool
    paused: NotRequired[bool]


class BindingDiagnostics(TypedDict):
    active: int
    outbox: int
    blocked: BlockedFlags


class Diagnostics(TypedDict):
    shard: int
    bindings: dict[str, BindingDiagnostics]


class BindingList(TypedDict):
    bindings: list[str]


class FlowList(TypedDict):
    flows: list[str]


class Schedule(TypedDict):
    name: str
    kind: Literal["job", "flow"]
    target: str
    every_ms: int | None
    cron: str | None
    overlap: Literal["skip", "overlap"]
    next_run_at: int
    last_run_at: int | None
    last_fired_at: int | None
    last_job_id: str | None
    last_run_id: str | None
    last_skipped_at: int | None
    skipped_count: int
    last_error: str | None


class ScheduleList(TypedDict):
    schedules: list[Schedule]


class RunSummary(TypedDict):
    id: str
    flow: str
    state: str
    node_total: int
    node_done: int
    node_failed: int
    created_at: int
    updated_at: int


class RunDetail(RunSummary):
    input: str
    parent_run_id: str | None
    parent_node_id: str | None
    retryable: bool


class RunNode(TypedDict):
    id: str
    binding: str
    state: str
    container: bool
    parent: str | None
    origin: Literal["static", "fanOut", "spawn"]
    after: list[str]
    job_id: str | None
    child_run_id: str | None
    result: str | None
    error: str | None
    position: int
    created_at: int
    updated_at: int
    wait: Literal["sleep", "event"] | None  # ADR-0147: what a waiting node waits for
    wait_event: str | None
    wake_at: int | None  # when a sleep ends or a wait for an event gives up


class EventAccepted(TypedDict):
    """200/202 of ``POST /api/runs/{id}/events/{event}`` (ADR-0148)."""

    accepted: bool
    node: str
    state: str  # COMPLETED: the node took the payload; PENDING: kept until the node waits


class RunList(TypedDict):
    runs: list[RunSummary]
    total: int


class RunDetailResponse(TypedDict):
    run: RunDetail
    nodes: list[RunNode]


class BindingMetrics(TypedDict):
    binding: str
    total: float
    failed: float
    failureRate: float
    avgDurationMs: float
    maxDurationMs: float
    p95DurationMs: float
    avgAttempts: float


class MetricsPoint(TypedDict):
    at: float | None
    total: float
    failed: float
    avgDurationMs: float


class MetricsResponse(TypedDict):
    hours: int
    bindings: list[BindingMetrics]
    series: list[MetricsPoint]


class PolicyResult(TypedDict):
    ok: Literal[True]
    settings: Mapping[str, object]  # the shard's settings as it answered them
    shards: int


# ------------------------------------------------------------------ request bodies, once accepted


class CreateJobRequest(TypedDict):
    """``POST /api/jobs`` after validation: only the fields that were given."""

    #

    binding: str
    payload: object  # any JSON value
    maxAttempts: NotRequired[float]
    delayMs: NotRequired[float]
    priority: NotRequired[float]
    concurrencyKey: NotRequired[str]
    uniqueKey: NotRequired[str]
    expiresInMs: NotRequired[float]  # a positive integer, perhaps written 5.0
    debounceKey: NotRequired[str]
    debounceMs: NotRequired[float]
    debounceMaxMs: NotRequired[float]
    throttleKey: NotRequired[str]
    throttle: NotRequired[object]  # a JSON object, unchecked here: the enqueue holds it to ThrottleRequest


class ThrottleRequest(TypedDict):
    """ADR-0150: ``tokens`` jobs per ``intervalMs`` for one throttle key."""

    tokens: int
    intervalMs: float
    onExcess: NotRequired[Literal["delay", "drop"]]


class RescheduleRequest(TypedDict):
    """``POST /api/jobs/:id/reschedule`` after validation: exactly one of ``runAt`` and ``delayMs``."""

    runAt: NotRequired[float]
    delayMs: NotRequired[float]
    priority: NotRequired[float]


class StartRunRequest(TypedDict):
    """``POST /api/runs`` after validation; ``id`` and ``deadlineMs`` are None when not given."""

    flow: str
    input: object  # any JSON value
    id: str | None
    deadlineMs: int | None


# ------------------------------------------------------------------ shaping


def fields_of(shape: type) -> tuple[str, ...]:
    """The wire fields of a shape, in wire order (inherited fields first)."""
    names: list[str] = []
    for klass in reversed(shape.__mro__):
        for name in getattr(klass, "__annotations__", {}):
            if name not in names:
                names.append(name)
    return tuple(names)


def pick(shape: type[Shape], source: Mapping[str, object], **overrides: object) -> Shape:
    """``source`` cut to the fields of ``shape``, in order; ``overrides`` win over ``source``.

    The values are not checked: ``source`` is a row or an answer the server wrote itself, whose columns
    are the shape's fields (the storage tests hold them to it), so the result is taken to be ``shape``.
    """
    picked = {name: overrides[name] if name in overrides else source.get(name) for name in fields_of(shape)}
    return cast(Shape, picked)


def _is_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def is_attempt_record(entry: object) -> TypeGuard[AttemptRecord]:
    """True when a stored attempts-log entry has the fields and types of an ``AttemptRecord``."""
    if not isinstance(entry, dict):
        return False
    started, error = entry.get("started_at"), entry.get("error")
    return (
        _is_int(entry.get("attempt"))
        and isinstance(entry.get("state"), str)
        and (started is None or _is_int(started))
        and _is_int(entry.get("finished_at"))
        and (error is None or isinstance(error, str))
        and all(name in entry for name in ("started_at", "error"))
    )


def blocked_flags(source: Mapping[str, object]) -> BlockedFlags:
    """The shard's ``blocked`` answer; ``paused`` only when the shard reported one."""
    # J-149b
    flags: BlockedFlags = {
        "capacity": bool(source.get("capacity")),
        "tokens": bool(source.get("tokens")),
        "perKey": bool(source.get("perKey")),
    }
    if source.get("paused") is not None:
        flags["paused"] = bool(source["paused"])
    return flags


def _count(value: object) -> int:
    """A count the shard answered; across a Durable Object RPC it may arrive as an integral float."""
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, float) and value.is_integer() else 0


def binding_diagnostics(source: Mapping[str, object]) -> BindingDiagnostics:
    blocked = source.get("blocked")
    return {
        "active": _count(source["active"]),
        "outbox": _count(source["outbox"]),
        "blocked": blocked_flags(blocked if isinstance(blocked, Mapping) else {}),
    }
