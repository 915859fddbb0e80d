"""Request and response bodies as pydantic models; the OpenAPI document is generated from them.

Field names are the wire names: camelCase request bodies for create, reschedule and start, snake_case
list and detail bodies, camelCase stats and metrics. Responses also read in Python spellings: snake_case
properties beside the camelCase fields, and ``decoded_*`` beside the JSON-text fields (``api/model_access``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from tsumugi.api.bulk_models import BulkActionRequest as BulkActionRequest  # ADR-0151
from tsumugi.api.bulk_models import BulkCount as BulkCount
from tsumugi.api.bulk_models import BulkFilter as BulkFilter
from tsumugi.api.bulk_models import BulkProgress as BulkProgress
from tsumugi.api.model_access import (
    BindingMetricsAccess,
    BlockedFlagsAccess,
    JobDetailAccess,
    MetricsPointAccess,
    RunDetailAccess,
    RunNodeAccess,
    StatsAccess,
)

JobStateName = Literal["SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"]


def integral_to_int(value: int | float) -> int | float:
    """An integral number prints without a fraction, as JavaScript prints it; pydantic would print ``2.0``."""
    #
    return int(value) if isinstance(value, float) and value.is_integer() else value


# REST does not enforce integers, so a stored priority may be fractional; integral ones stay ints.
JS_NUMBER_VALIDATOR = AfterValidator(integral_to_int)
JsNumber = Annotated[int | float, JS_NUMBER_VALIDATOR, WithJsonSchema({"type": "number"})]

# Optional request fields may be omitted but never sent as null: no null in their schema.
Omitted = SkipJsonSchema[None]
NodeStateName = Literal[
    "PENDING", "SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"
]


class Error(BaseModel):
    error: str


class Mutation(BaseModel):
    ok: Literal[True]
    requested: bool = Field(default=False, description="present (true) when a running job was asked to stop")


class JobSummary(BaseModel):
    id: str
    binding: str
    state: JobStateName
    priority: JsNumber
    attempts: int
    max_attempts: int
    created_at: int
    updated_at: int
    dispatched_at: int | None
    retryable: bool


class AttemptRecord(BaseModel):
    model_config = ConfigDict(extra="allow")  # stored entries also carry job_id

    attempt: int
    state: str
    started_at: int | None
    finished_at: int
    error: str | None


class JobDetail(JobDetailAccess, BaseModel):
    id: str
    binding: str
    state: JobStateName
    priority: JsNumber
    attempts: int
    max_attempts: int
    created_at: int
    updated_at: int
    dispatched_at: int | None
    retryable: bool
    concurrency_key: str | None
    unique_key: str | None
    guarantee: Literal["at-least-once", "at-most-once"]
    run_after: int | None
    progress: float | None
    payload: str
    result: str | None
    attempts_log: list[AttemptRecord]


class JobList(BaseModel):
    jobs: list[JobSummary]
    total: int


class JobDetailResponse(BaseModel):
    job: JobDetail


class ThrottleRequest(BaseModel):
    """``tokens`` jobs per ``intervalMs`` for one throttle key; the excess is delayed or dropped."""

    tokens: Annotated[int, Field(ge=1)]
    intervalMs: Annotated[float, Field(gt=0)]
    onExcess: Literal["delay", "drop"] = "delay"


class CreateJobRequest(BaseModel):
    binding: str = Field(min_length=1)
    payload: object
    maxAttempts: Annotated[float, Field(ge=1)] | Omitted = None
    delayMs: Annotated[float, Field(ge=0)] | Omitted = None
    priority: float | Omitted = None
    concurrencyKey: str | Omitted = None
    uniqueKey: str | Omitted = None
    expiresInMs: Annotated[int, Field(ge=1)] | Omitted = Field(
        default=None, description="the job must not start later than this after enqueue (J-41)"
    )
    debounceKey: str | Omitted = Field(
        default=None, description="a waiting job with this key takes the payload instead of a new job"
    )
    debounceMs: Annotated[float, Field(gt=0)] | Omitted = Field(
        default=None, description="with debounceKey: the job runs this long after the last enqueue"
    )
    debounceMaxMs: Annotated[float, Field(gt=0)] | Omitted = Field(
        default=None, description="with debounceKey: the job runs at most this long after the first enqueue"
    )
    throttleKey: str | Omitted = Field(
        default=None, description="the key whose throttle this job counts against"
    )
    throttle: ThrottleRequest | Omitted = None


class Debounced(BaseModel):
    """The enqueue went into a waiting job with the same debounce key (200)."""

    id: str
    debounced: Literal[True]
    runAfter: int | None


class Dropped(BaseModel):
    """A throttle dropped the job: none was created (200)."""

    id: None
    dropped: Literal[True]
    runAfter: int | None = Field(description="when the throttle key next has a free slot")


class EnqueueAnswer(RootModel[Debounced | Dropped]):
    """``POST /api/jobs`` with a debounce or throttle key when no new job was made (200)."""


class Created(BaseModel):
    id: str


class RescheduleRequest(BaseModel):
    """Exactly one of ``runAt`` and ``delayMs``."""

    #

    runAt: float | Omitted = None
    delayMs: Annotated[float, Field(ge=0)] | Omitted = None
    priority: float | Omitted = None


class BulkRequest(BaseModel):
    """Either ``ids`` (every other field is then ignored) or a filter."""

    #

    ids: (
        Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1, max_length=200)] | Omitted
    ) = None
    binding: str | Omitted = None
    state: str | Omitted = None
    unique_key: str | Omitted = None
    concurrency_key: str | Omitted = None
    created_from: float | Omitted = None
    created_to: float | Omitted = None
    limit: int = Field(default=200, ge=1, le=200)


class BulkFailure(BaseModel):
    id: str
    reason: Literal["invalid-state", "gone", "invalid-id"]


class BulkResult(BaseModel):
    ok: list[str]
    failed: list[BulkFailure]
    remaining: int


class Stats(StatsAccess, BaseModel):
    byState: dict[str, int]
    oldestScheduledMs: int | None


class BlockedFlags(BlockedFlagsAccess, BaseModel):
    capacity: bool
    tokens: bool
    perKey: bool
    # J-149b and the seed page: diagnostics show a pause; passed through when the shard reports one.
    paused: bool | Omitted = Field(
        default=None, description="a pause held back a ready job on the last tick (newer release)"
    )


class BindingDiagnostics(BaseModel):
    active: int
    outbox: int
    blocked: BlockedFlags


class Diagnostics(BaseModel):
    shard: int
    bindings: dict[str, BindingDiagnostics]


class BindingList(BaseModel):
    bindings: list[str]


class FlowList(BaseModel):
    flows: list[str]


class Schedule(BaseModel):
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


class ScheduleList(BaseModel):
    schedules: list[Schedule]


class RunSummary(BaseModel):
    id: str
    flow: str
    state: str
    node_total: int
    node_done: int
    node_failed: int
    created_at: int
    updated_at: int


class RunDetail(RunDetailAccess, BaseModel):
    id: str
    flow: str
    state: str
    node_total: int
    node_done: int
    node_failed: int
    created_at: int
    updated_at: int
    input: str
    parent_run_id: str | None
    parent_node_id: str | None
    retryable: bool


class RunNode(RunNodeAccess, BaseModel):
    id: str
    binding: str
    state: NodeStateName
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
    wait: Literal["sleep", "event"] | None = Field(
        default=None, description="what a waiting node waits for; null for every other node"
    )
    wait_event: str | None = Field(default=None, description="the event a wait-for-event node waits for")
    wake_at: int | None = Field(
        default=None, description="epoch ms when a sleep ends or a wait for an event gives up"
    )


class EventAccepted(BaseModel):
    """The event was taken (200, state COMPLETED) or kept until its node waits (202, state PENDING)."""

    accepted: Literal[True]
    node: str
    state: Literal["COMPLETED", "PENDING"]


class EventRefused(BaseModel):
    """409 ``already satisfied`` or ``not allowed in the current state``; 404 when no node waits for it."""

    accepted: Literal[False]
    node: str | None = None
    error: str


class RunList(BaseModel):
    runs: list[RunSummary]
    total: int


class RunDetailResponse(BaseModel):
    run: RunDetail
    nodes: list[RunNode]


class StartRunRequest(BaseModel):
    flow: str = Field(min_length=1)
    input: object
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]*$")] | Omitted = None
    deadlineMs: Annotated[int, Field(ge=1)] | Omitted = None


class BindingMetrics(BindingMetricsAccess, BaseModel):
    binding: str
    total: float
    failed: float
    failureRate: float
    avgDurationMs: float
    maxDurationMs: float
    p95DurationMs: float
    avgAttempts: float


class MetricsPoint(MetricsPointAccess, BaseModel):
    at: float | None
    total: float
    failed: float
    avgDurationMs: float


class MetricsResponse(BaseModel):
    hours: int
    bindings: list[BindingMetrics]
    series: list[MetricsPoint]


class RateLimit(BaseModel):
    tokens: int = Field(ge=1)
    intervalMs: int = Field(ge=1)


class PolicyPatch(BaseModel):
    paused: bool | Omitted = None
    concurrency: Annotated[int, Field(ge=0)] | Omitted = None
    perKeyConcurrency: Annotated[int, Field(ge=0)] | Omitted = None
    reaperGraceMs: Annotated[int, Field(ge=0)] | Omitted = None
    rate: RateLimit | None = None
    perKeyRate: RateLimit | None = None
    agingIntervalMs: Annotated[float, Field(gt=0)] | None = None


class PolicyResult(BaseModel):
    ok: Literal[True]
    settings: dict[str, object]
    shards: int


class OpenApiDocument(BaseModel):
    model_config = ConfigDict(extra="allow")

    openapi: str
