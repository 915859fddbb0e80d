"""The operation table (the REST routes, policy routes included) that the OpenAPI document is built from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from tsumugi.core.json_types import JsonMapping, JsonValue


@dataclass(frozen=True)
class Param:
    name: str
    schema: JsonMapping
    location: str = "query"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    response: str
    success: int = 200
    errors: tuple[int, ...] = (401, 503)
    request: str | None = None
    params: tuple[Param, ...] = ()
    error_descriptions: Mapping[int, str] = field(default_factory=dict)
    # Other success answers: status -> (schema, description), e.g. a debounced or dropped enqueue.
    alternatives: Mapping[int, tuple[str, str]] = field(default_factory=dict)


_STRING: Final = {"type": "string"}
_ID: Final = Param("id", _STRING, "path")
# what the mutation routes accept; anything else is 400 "invalid job id" / "invalid run id".
_JOB_ID: Final = Param(
    "id", {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*#[0-9]+:[A-Za-z0-9_-]+$"}, "path"
)
_RUN_ID: Final = Param("id", {"type": "string", "pattern": r"^[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$"}, "path")
_PAGING: Final = (
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
    Param("offset", {"type": "integer", "minimum": 0, "default": 0}),
)
_SORTS: Final[list[JsonValue]] = ["updated_at", "created_at", "binding", "state", "priority", "attempts"]
_JOB_QUERY: Final = (
    Param("state", _STRING),
    Param("binding", _STRING),
    Param("id", _STRING),
    Param("unique_key", _STRING),
    Param("concurrency_key", _STRING),
    Param("created_from", {"type": "integer"}),
    Param("created_to", {"type": "integer"}),
    Param("sort", {"type": "string", "enum": _SORTS, "default": "updated_at"}),
    Param("order", {"type": "string", "enum": ["asc", "desc"], "default": "desc"}),
    *_PAGING,
)
_REFUSALS: Final = {
    409: "not allowed in the current state",
    410: "no longer available: removed from the coordinator after the retention period",
}
_BINDING: Final = Param("binding", _STRING, "path")
# ADR-0148: the event name of a wait-for-event node, and what the event route refuses with.
_EVENT: Final = Param("event", {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,128}$"}, "path")
_EVENT_REFUSALS: Final = {
    404: "unknown run, or no node of this run waits for this event",
    409: "already satisfied, or not allowed in the current state",
}

# ADR-0149, ADR-0150: an enqueue with a debounce or throttle key may create no job.
_KEYED_ANSWERS: Final = {
    200: ("EnqueueAnswer", "no new job: debounced into a waiting job, or dropped by a throttle"),
}

OPERATIONS: Final[tuple[Operation, ...]] = (
    Operation("GET", "/api/jobs", "listJobs", "List jobs", "JobList", params=_JOB_QUERY),
    Operation("POST", "/api/jobs", "createJob", "Enqueue a job", "Created", 201, (400, 401, 501, 503),
              request="CreateJobRequest", alternatives=_KEYED_ANSWERS),
    Operation("GET", "/api/jobs/{id}", "getJob", "Job detail", "JobDetailResponse", errors=(401, 404, 503),
              params=(_ID,)),
    Operation("POST", "/api/jobs/{id}/retry", "retryJob", "Retry a FAILED or STALLED job", "Mutation",
              errors=(400, 401, 409, 410, 503), params=(_JOB_ID,), error_descriptions=_REFUSALS),
    Operation("POST", "/api/jobs/{id}/reschedule", "rescheduleJob", "Move a SCHEDULED job", "Mutation",
              errors=(400, 401, 409, 410, 503), request="RescheduleRequest", params=(_JOB_ID,),
              error_descriptions=_REFUSALS),
    Operation("POST", "/api/jobs/{id}/cancel", "cancelJob", "Cancel a job", "Mutation",
              errors=(400, 401, 409, 410, 503), params=(_JOB_ID,), error_descriptions=_REFUSALS),
    Operation("POST", "/api/jobs/bulk-retry", "bulkRetryJobs", "Retry many jobs", "BulkResult",
              errors=(400, 401, 503), request="BulkRequest"),
    Operation("POST", "/api/jobs/bulk-cancel", "bulkCancelJobs", "Cancel many jobs", "BulkResult",
              errors=(400, 401, 503), request="BulkRequest"),
    Operation("POST", "/api/bulk", "startBulkAction", "Act on every job a filter matches", "BulkProgress",
              202, (400, 401, 503), request="BulkActionRequest",
              alternatives={200: ("BulkCount", "a dry run: how many jobs the action would reach")}),
    Operation("GET", "/api/bulk/{id}", "getBulkAction", "A bulk action's progress", "BulkProgress",
              errors=(401, 404, 503), params=(_ID,)),
    Operation("GET", "/api/bindings", "listBindings", "Binding names", "BindingList"),
    Operation("POST", "/api/bindings/{binding}/policy", "updateBindingPolicy", "Change a binding's policy",
              "PolicyResult", errors=(400, 401, 404, 503), request="PolicyPatch", params=(_BINDING,)),
    Operation("POST", "/api/bindings/{binding}/policy/reset", "resetBindingPolicy",
              "Return a binding to its static policy", "PolicyResult", errors=(401, 404, 503),
              params=(_BINDING,)),
    Operation("GET", "/api/metrics", "getMetrics", "Terminal-job metrics", "MetricsResponse",
              errors=(400, 401, 501, 502, 503),
              params=(Param("hours", {"type": "integer", "minimum": 1, "maximum": 720, "default": 24}),
                      Param("binding", _STRING))),
    Operation("GET", "/api/stats", "getStats", "Counts per state", "Stats"),
    Operation("GET", "/api/diagnostics", "getDiagnostics", "Live shard diagnostics", "Diagnostics"),
    Operation("GET", "/api/schedules", "listSchedules", "Schedules", "ScheduleList", errors=(401, 501, 503)),
    Operation("GET", "/api/runs", "listRuns", "List runs", "RunList",
              params=(Param("state", _STRING), Param("flow", _STRING), *_PAGING)),
    Operation("POST", "/api/runs", "startRun", "Start a run", "Created", 201, (400, 401, 501, 503),
              request="StartRunRequest"),
    Operation("GET", "/api/runs/{id}", "getRun", "Run detail with nodes", "RunDetailResponse",
              errors=(401, 404, 503), params=(_ID,)),
    Operation("POST", "/api/runs/{id}/retry", "retryRun", "Resume a FAILED run", "Mutation",
              errors=(400, 401, 409, 410, 501, 503), params=(_RUN_ID,), error_descriptions=_REFUSALS),
    Operation("POST", "/api/runs/{id}/cancel", "cancelRun", "Cancel a RUNNING run", "Mutation",
              errors=(400, 401, 409, 410, 501, 503), params=(_RUN_ID,), error_descriptions=_REFUSALS),
    Operation("POST", "/api/runs/{id}/events/{event}", "sendRunEvent",
              "Send an event to the run's wait-for-event node; the JSON body is the payload", "EventAccepted",
              errors=(400, 401, 404, 409, 501, 503), params=(_RUN_ID, _EVENT),
              error_descriptions=_EVENT_REFUSALS,
              alternatives={202: ("EventAccepted", "kept until its node waits (state PENDING)")}),
    Operation("GET", "/api/flows", "listFlows", "Flow names", "FlowList"),
    Operation("GET", "/api/openapi.json", "getOpenApi", "This document", "OpenApiDocument", errors=(401,)),
)  # fmt: skip
