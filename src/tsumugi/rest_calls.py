"""Every REST call the clients make, described once as a value; the sync and async clients only send them.

A call names its method, path, query, body and how its answer is read. Mutations answer with values, like
the shard RPC: ``{"ok": True}`` (plus ``requested``), or ``{"ok": False, "reason": "invalid-state" |
"gone"}`` for 409/410. Every other non-2xx answer raises ``RestApiError`` with the status and the
server's ``error`` text.
"""
# api.md Part A, J-131

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx

from tsumugi import rest_answers as answers
from tsumugi.api import models
from tsumugi.core.json_types import JsonValue
from tsumugi.errors import TsumugiError
from tsumugi.rest_requests import (
    BulkActionBody,
    BulkSelection,
    JobOptions,
    JobQuery,
    PolicyPatchBody,
    QueryValue,
    RunQuery,
    query,
)

__all__ = ["DEFAULT_TIMEOUT_S", "Call", "Calls", "RestApiError", "headers", "result"]

T = TypeVar("T")
DEFAULT_TIMEOUT_S: Final = 30.0


class RestApiError(TsumugiError):
    """A refused REST call: ``status``, the body's ``error`` message, and the JSON ``body`` (None if none)."""

    def __init__(self, status: int, message: str, body: JsonValue = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how its answer is read (``parse`` checks the JSON body into ``T``)."""

    method: Literal["GET", "POST"]
    path: str
    parse: Callable[[object], T]
    params: Mapping[str, QueryValue] = field(default_factory=dict)
    body: object = None
    mutation: bool = False
    answers: bool = False  # ADR-0148: a refusal that carries "accepted" is an answer, not an error


def _segment(value: str) -> str:
    return quote(value, safe="")  # ids carry '#', which must travel as %23


def result(call: Call[T], response: httpx.Response) -> T:
    """The answer of ``call``: parsed, a refused mutation as a value, or ``RestApiError``."""
    body: JsonValue
    try:
        body = response.json()
    except ValueError:
        body = None
    if call.mutation and response.status_code in (409, 410):
        return call.parse({"ok": False, "reason": "gone" if response.status_code == 410 else "invalid-state"})
    if call.answers and isinstance(body, dict) and "accepted" in body:
        return call.parse(body)
    if response.status_code >= 400:
        message = body.get("error") if isinstance(body, dict) else response.text
        raise RestApiError(response.status_code, str(message), body)
    return call.parse(body)


def headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def _get(path: str, parse: Callable[[object], T], params: Mapping[str, QueryValue] | None = None) -> Call[T]:
    return Call("GET", path, parse, params or {})


class Calls:
    """Builds every call; each method's name is the client method that sends it."""

    @staticmethod
    def list_jobs(filters: JobQuery) -> Call[models.JobList]:
        return _get("/api/jobs", models.JobList.model_validate, query(filters))

    @staticmethod
    def get_job(job_id: str) -> Call[models.JobDetailResponse]:
        return _get(f"/api/jobs/{_segment(job_id)}", models.JobDetailResponse.model_validate)

    @staticmethod
    def create_job(binding: str, payload: object, options: JobOptions) -> Call[models.Created]:
        body = {"binding": binding, "payload": payload, **options}
        return Call("POST", "/api/jobs", models.Created.model_validate, body=body)

    @staticmethod
    def enqueue_job(binding: str, payload: object, options: JobOptions) -> Call[answers.JobAnswer]:
        """A create with a debounce or throttle key, whose answer may be that no new job was made."""
        body = {"binding": binding, "payload": payload, **options}
        return Call("POST", "/api/jobs", answers.parse_job_answer, body=body)

    @staticmethod
    def job_action(
        job_id: str, action: Literal["retry", "cancel", "reschedule"], body: object = None
    ) -> Call[answers.MutationAnswer]:
        path = f"/api/jobs/{_segment(job_id)}/{action}"
        sent = body if body is not None else {}
        return Call("POST", path, answers.parse_mutation, body=sent, mutation=True)

    @staticmethod
    def bulk(action: Literal["retry", "cancel"], selection: BulkSelection) -> Call[models.BulkResult]:
        #
        return Call("POST", f"/api/jobs/bulk-{action}", models.BulkResult.model_validate, body=selection)

    @staticmethod
    def count_bulk(body: BulkActionBody) -> Call[answers.BulkCount]:
        """A dry run: how many jobs the action would reach."""
        return Call("POST", "/api/bulk", answers.parse_bulk_count, body={**body, "dryRun": True})

    @staticmethod
    def start_bulk(body: BulkActionBody, dry_run: Literal[False] | None) -> Call[answers.BulkProgress]:
        sent = dict(body) if dry_run is None else {**body, "dryRun": dry_run}
        return Call("POST", "/api/bulk", answers.parse_bulk_progress, body=sent)

    @staticmethod
    def bulk_progress(bulk_id: str) -> Call[answers.BulkProgress]:
        return _get(f"/api/bulk/{_segment(bulk_id)}", answers.parse_bulk_progress)

    @staticmethod
    def stats() -> Call[models.Stats]:
        return _get("/api/stats", models.Stats.model_validate)

    @staticmethod
    def diagnostics() -> Call[models.Diagnostics]:
        return _get("/api/diagnostics", models.Diagnostics.model_validate)

    @staticmethod
    def bindings() -> Call[models.BindingList]:
        return _get("/api/bindings", models.BindingList.model_validate)

    @staticmethod
    def update_policy(binding: str, patch: PolicyPatchBody) -> Call[models.PolicyResult]:
        path = f"/api/bindings/{_segment(binding)}/policy"
        return Call("POST", path, models.PolicyResult.model_validate, body=patch)

    @staticmethod
    def reset_policy(binding: str) -> Call[models.PolicyResult]:
        path = f"/api/bindings/{_segment(binding)}/policy/reset"
        return Call("POST", path, models.PolicyResult.model_validate, body={})

    @staticmethod
    def flows() -> Call[models.FlowList]:
        return _get("/api/flows", models.FlowList.model_validate)

    @staticmethod
    def list_runs(filters: RunQuery) -> Call[models.RunList]:
        return _get("/api/runs", models.RunList.model_validate, query(filters))

    @staticmethod
    def get_run(run_id: str) -> Call[models.RunDetailResponse]:
        return _get(f"/api/runs/{_segment(run_id)}", models.RunDetailResponse.model_validate)

    @staticmethod
    def start_run(body: Mapping[str, object]) -> Call[models.Created]:
        return Call("POST", "/api/runs", models.Created.model_validate, body=dict(body))

    @staticmethod
    def run_action(run_id: str, action: Literal["retry", "cancel"]) -> Call[answers.MutationAnswer]:
        path = f"/api/runs/{_segment(run_id)}/{action}"
        return Call("POST", path, answers.parse_mutation, body={}, mutation=True)

    @staticmethod
    def run_event(run_id: str, event: str, payload: object) -> Call[answers.EventAnswer]:
        path = f"/api/runs/{_segment(run_id)}/events/{_segment(event)}"
        return Call("POST", path, answers.parse_event, body=payload, answers=True)

    @staticmethod
    def schedules() -> Call[models.ScheduleList]:
        return _get("/api/schedules", models.ScheduleList.model_validate)

    @staticmethod
    def metrics(hours: int | None, binding: str | None) -> Call[models.MetricsResponse]:
        params = query({"hours": hours, "binding": binding})
        return _get("/api/metrics", models.MetricsResponse.model_validate, params)

    @staticmethod
    def openapi() -> Call[answers.OpenApiDocument]:
        return _get("/api/openapi.json", answers.parse_openapi)
