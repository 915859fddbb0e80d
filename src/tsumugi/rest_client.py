"""A typed REST client for Tsumugi's ``/api``, sync and async, on httpx.

Mutations answer with values, like the shard RPC: ``{"ok": True}`` (plus ``requested``),
or ``{"ok": False, "reason": "invalid-state" | "gone"}`` for 409/410. Every other non-2xx answer raises
``RestApiError`` with the status and the server's ``error`` text.
"""
# api.md Part A, J-131

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from tsumugi.api import models
from tsumugi.errors import TsumugiError

__all__ = ["DEFAULT_TIMEOUT_S", "AsyncTsumugiClient", "RestApiError", "TsumugiClient"]

M = TypeVar("M", bound=BaseModel)
Parse = Any  # a model class, or None for a raw mutation dict
DEFAULT_TIMEOUT_S = 30.0


class RestApiError(TsumugiError):
    """A refused REST call: ``status`` and the body's ``error`` message."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass(frozen=True)
class _Call(Generic[M]):
    method: str
    path: str
    model: type[M] | None
    params: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    mutation: bool = False
    answers: bool = False  # ADR-0148: a refusal that carries "accepted" is an answer, not an error


def _segment(value: str) -> str:
    return quote(value, safe="")  # ids carry '#', which must travel as %23


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _result(call: _Call[Any], response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if call.mutation and response.status_code in (409, 410):
        return {"ok": False, "reason": "gone" if response.status_code == 410 else "invalid-state"}
    if call.answers and isinstance(body, dict) and "accepted" in body:
        return body
    if response.status_code >= 400:
        message = body.get("error") if isinstance(body, dict) else response.text
        raise RestApiError(response.status_code, str(message), body)
    return body if call.model is None else call.model.model_validate(body)


class _Calls:
    """Builds every call once; the sync and async clients only send them."""

    @staticmethod
    def list_jobs(**query: Any) -> _Call[models.JobList]:
        return _Call("GET", "/api/jobs", models.JobList, _drop_none(query))

    @staticmethod
    def get_job(job_id: str) -> _Call[models.JobDetailResponse]:
        return _Call("GET", f"/api/jobs/{_segment(job_id)}", models.JobDetailResponse)

    @staticmethod
    def create_job(binding: str, payload: Any, options: Mapping[str, Any]) -> _Call[models.Created]:
        return _Call(
            "POST", "/api/jobs", models.Created, body={"binding": binding, "payload": payload, **options}
        )

    @staticmethod
    def job_action(job_id: str, action: str, body: Any = None) -> _Call[Any]:
        path = f"/api/jobs/{_segment(job_id)}/{action}"
        return _Call("POST", path, None, body=body if body is not None else {}, mutation=True)

    @staticmethod
    def bulk(action: str, body: Mapping[str, Any]) -> _Call[models.BulkResult]:
        return _Call("POST", f"/api/jobs/bulk-{action}", models.BulkResult, body=dict(body))

    @staticmethod
    def run_action(run_id: str, action: str) -> _Call[Any]:
        return _Call("POST", f"/api/runs/{_segment(run_id)}/{action}", None, body={}, mutation=True)

    @staticmethod
    def run_event(run_id: str, event: str, payload: Any) -> _Call[Any]:
        path = f"/api/runs/{_segment(run_id)}/events/{_segment(event)}"
        return _Call("POST", path, None, body=payload, answers=True)


def _job_options(
    max_attempts: int | None, delay_ms: int | None, priority: int | None, concurrency_key: str | None,
    unique_key: str | None,
) -> dict[str, Any]:  # fmt: skip
    return _drop_none(
        {
            "maxAttempts": max_attempts,
            "delayMs": delay_ms,
            "priority": priority,
            "concurrencyKey": concurrency_key,
            "uniqueKey": unique_key,
        }
    )


def _reschedule_body(run_at: int | None, delay_ms: int | None, priority: int | None) -> dict[str, Any]:
    return _drop_none({"runAt": run_at, "delayMs": delay_ms, "priority": priority})


def _start_body(flow: str, input: Any, run_id: str | None, deadline_ms: int | None) -> dict[str, Any]:
    return {"flow": flow, "input": input, **_drop_none({"id": run_id, "deadlineMs": deadline_ms})}


def _headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


class TsumugiClient:
    """Synchronous client: ``TsumugiClient("https://example.com", token)``."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(token), timeout=timeout_s, transport=transport
        )

    def __enter__(self) -> TsumugiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _Call[Any]) -> Any:
        body = call.body if call.method == "POST" else None
        response = self._http.request(call.method, call.path, params=dict(call.params), json=body)
        return _result(call, response)

    def list_jobs(self, **query: Any) -> models.JobList:
        """Query parameters of ``GET /api/jobs`` (``state``, ``binding``, ``sort``, ``limit``, ...)."""
        return cast(models.JobList, self._send(_Calls.list_jobs(**query)))

    def get_job(self, job_id: str) -> models.JobDetail:
        result: models.JobDetailResponse = self._send(_Calls.get_job(job_id))
        return result.job

    def create_job(
        self, binding: str, payload: Any, *, max_attempts: int | None = None, delay_ms: int | None = None,
        priority: int | None = None, concurrency_key: str | None = None, unique_key: str | None = None,
    ) -> str:  # fmt: skip
        options = _job_options(max_attempts, delay_ms, priority, concurrency_key, unique_key)
        created: models.Created = self._send(_Calls.create_job(binding, payload, options))
        return created.id

    def retry_job(self, job_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._send(_Calls.job_action(job_id, "retry")))

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._send(_Calls.job_action(job_id, "cancel")))

    def reschedule_job(
        self,
        job_id: str,
        *,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        body = _reschedule_body(run_at, delay_ms, priority)
        return cast(dict[str, Any], self._send(_Calls.job_action(job_id, "reschedule", body)))

    def bulk_retry(self, **body: Any) -> models.BulkResult:
        """``ids=[...]`` or filter fields."""
        #
        return cast(models.BulkResult, self._send(_Calls.bulk("retry", body)))

    def bulk_cancel(self, **body: Any) -> models.BulkResult:
        return cast(models.BulkResult, self._send(_Calls.bulk("cancel", body)))

    def start_bulk(self, **body: Any) -> dict[str, Any]:
        """``POST /api/bulk`` (ADR-0151): ``action``, ``filter``, ``dryRun``, ``cap``, ``includeRunning``."""
        return cast(dict[str, Any], self._send(_Call("POST", "/api/bulk", None, body=body)))

    def bulk_progress(self, bulk_id: str) -> dict[str, Any]:
        """``GET /api/bulk/{id}``: ``{state, matched, done, failed, remaining, ...}``; a poll moves it on."""
        return cast(dict[str, Any], self._send(_Call("GET", f"/api/bulk/{_segment(bulk_id)}", None)))

    def stats(self) -> models.Stats:
        return cast(models.Stats, self._send(_Call("GET", "/api/stats", models.Stats)))

    def diagnostics(self) -> models.Diagnostics:
        return cast(models.Diagnostics, self._send(_Call("GET", "/api/diagnostics", models.Diagnostics)))

    def bindings(self) -> list[str]:
        result: models.BindingList = self._send(_Call("GET", "/api/bindings", models.BindingList))
        return result.bindings

    def update_policy(self, binding: str, **patch: Any) -> models.PolicyResult:
        """The policy's camelCase fields (``paused``, ``concurrency``, ``perKeyConcurrency``, ...)."""
        call = _Call("POST", f"/api/bindings/{_segment(binding)}/policy", models.PolicyResult, body=patch)
        return cast(models.PolicyResult, self._send(call))

    def reset_policy(self, binding: str) -> models.PolicyResult:
        call = _Call("POST", f"/api/bindings/{_segment(binding)}/policy/reset", models.PolicyResult, body={})
        return cast(models.PolicyResult, self._send(call))

    def flows(self) -> list[str]:
        result: models.FlowList = self._send(_Call("GET", "/api/flows", models.FlowList))
        return result.flows

    def list_runs(self, **query: Any) -> models.RunList:
        return cast(models.RunList, self._send(_Call("GET", "/api/runs", models.RunList, _drop_none(query))))

    def get_run(self, run_id: str) -> models.RunDetailResponse:
        return cast(
            models.RunDetailResponse,
            self._send(_Call("GET", f"/api/runs/{_segment(run_id)}", models.RunDetailResponse)),
        )

    def start_run(
        self, flow: str, input: Any, *, run_id: str | None = None, deadline_ms: int | None = None
    ) -> str:
        body = _start_body(flow, input, run_id, deadline_ms)
        created: models.Created = self._send(_Call("POST", "/api/runs", models.Created, body=body))
        return created.id

    def retry_run(self, run_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._send(_Calls.run_action(run_id, "retry")))

    def cancel_run(self, run_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._send(_Calls.run_action(run_id, "cancel")))

    def send_event(self, run_id: str, event: str, payload: Any = None) -> dict[str, Any]:
        """Send ``event`` to the run; ``payload`` becomes the waiting node's result (ADR-0148).

        Returns ``{"accepted": True, "node", "state"}`` (state COMPLETED, or PENDING when the event is
        kept until the node waits) or ``{"accepted": False, "error", "node"?}`` when refused (already
        satisfied, not allowed in the current state, no node waits for it). An unknown run raises.
        """
        return cast(dict[str, Any], self._send(_Calls.run_event(run_id, event, payload)))

    def schedules(self) -> list[models.Schedule]:
        result: models.ScheduleList = self._send(_Call("GET", "/api/schedules", models.ScheduleList))
        return result.schedules

    def metrics(self, hours: int | None = None, binding: str | None = None) -> models.MetricsResponse:
        params = _drop_none({"hours": hours, "binding": binding})
        return cast(
            models.MetricsResponse, self._send(_Call("GET", "/api/metrics", models.MetricsResponse, params))
        )

    def openapi(self) -> dict[str, Any]:
        return cast(dict[str, Any], self._send(_Call("GET", "/api/openapi.json", None)))


class AsyncTsumugiClient:
    """Asynchronous client: ``async with AsyncTsumugiClient(base_url, token) as api: ...``."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(token), timeout=timeout_s, transport=transport
        )

    async def __aenter__(self) -> AsyncTsumugiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _Call[Any]) -> Any:
        body = call.body if call.method == "POST" else None
        response = await self._http.request(call.method, call.path, params=dict(call.params), json=body)
        return _result(call, response)

    async def list_jobs(self, **query: Any) -> models.JobList:
        """Query parameters of ``GET /api/jobs`` (``state``, ``binding``, ``sort``, ``limit``, ...)."""
        return cast(models.JobList, await self._send(_Calls.list_jobs(**query)))

    async def get_job(self, job_id: str) -> models.JobDetail:
        result: models.JobDetailResponse = await self._send(_Calls.get_job(job_id))
        return result.job

    async def create_job(
        self, binding: str, payload: Any, *, max_attempts: int | None = None, delay_ms: int | None = None,
        priority: int | None = None, concurrency_key: str | None = None, unique_key: str | None = None,
    ) -> str:  # fmt: skip
        options = _job_options(max_attempts, delay_ms, priority, concurrency_key, unique_key)
        created: models.Created = await self._send(_Calls.create_job(binding, payload, options))
        return created.id

    async def retry_job(self, job_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self._send(_Calls.job_action(job_id, "retry")))

    async def cancel_job(self, job_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self._send(_Calls.job_action(job_id, "cancel")))

    async def reschedule_job(
        self,
        job_id: str,
        *,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        body = _reschedule_body(run_at, delay_ms, priority)
        return cast(dict[str, Any], await self._send(_Calls.job_action(job_id, "reschedule", body)))

    async def bulk_retry(self, **body: Any) -> models.BulkResult:
        """``ids=[...]`` or filter fields."""
        #
        return cast(models.BulkResult, await self._send(_Calls.bulk("retry", body)))

    async def bulk_cancel(self, **body: Any) -> models.BulkResult:
        return cast(models.BulkResult, await self._send(_Calls.bulk("cancel", body)))

    async def stats(self) -> models.Stats:
        return cast(models.Stats, await self._send(_Call("GET", "/api/stats", models.Stats)))

    async def diagnostics(self) -> models.Diagnostics:
        return cast(
            models.Diagnostics, await self._send(_Call("GET", "/api/diagnostics", models.Diagnostics))
        )

    async def bindings(self) -> list[str]:
        result: models.BindingList = await self._send(_Call("GET", "/api/bindings", models.BindingList))
        return result.bindings

    async def update_policy(self, binding: str, **patch: Any) -> models.PolicyResult:
        """The policy's camelCase fields (``paused``, ``concurrency``, ``perKeyConcurrency``, ...)."""
        call = _Call("POST", f"/api/bindings/{_segment(binding)}/policy", models.PolicyResult, body=patch)
        return cast(models.PolicyResult, await self._send(call))

    async def reset_policy(self, binding: str) -> models.PolicyResult:
        call = _Call("POST", f"/api/bindings/{_segment(binding)}/policy/reset", models.PolicyResult, body={})
        return cast(models.PolicyResult, await self._send(call))

    async def flows(self) -> list[str]:
        result: models.FlowList = await self._send(_Call("GET", "/api/flows", models.FlowList))
        return result.flows

    async def list_runs(self, **query: Any) -> models.RunList:
        return cast(
            models.RunList, await self._send(_Call("GET", "/api/runs", models.RunList, _drop_none(query)))
        )

    async def get_run(self, run_id: str) -> models.RunDetailResponse:
        return cast(
            models.RunDetailResponse,
            await self._send(_Call("GET", f"/api/runs/{_segment(run_id)}", models.RunDetailResponse)),
        )

    async def start_run(
        self, flow: str, input: Any, *, run_id: str | None = None, deadline_ms: int | None = None
    ) -> str:
        body = _start_body(flow, input, run_id, deadline_ms)
        created: models.Created = await self._send(_Call("POST", "/api/runs", models.Created, body=body))
        return created.id

    async def retry_run(self, run_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self._send(_Calls.run_action(run_id, "retry")))

    async def cancel_run(self, run_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self._send(_Calls.run_action(run_id, "cancel")))

    async def send_event(self, run_id: str, event: str, payload: Any = None) -> dict[str, Any]:
        """Send ``event`` to the run; ``payload`` becomes the waiting node's result (ADR-0148).

        Returns ``{"accepted": True, "node", "state"}`` (state COMPLETED, or PENDING when the event is
        kept until the node waits) or ``{"accepted": False, "error", "node"?}`` when refused (already
        satisfied, not allowed in the current state, no node waits for it). An unknown run raises.
        """
        return cast(dict[str, Any], await self._send(_Calls.run_event(run_id, event, payload)))

    async def schedules(self) -> list[models.Schedule]:
        result: models.ScheduleList = await self._send(_Call("GET", "/api/schedules", models.ScheduleList))
        return result.schedules

    async def metrics(self, hours: int | None = None, binding: str | None = None) -> models.MetricsResponse:
        params = _drop_none({"hours": hours, "binding": binding})
        return cast(
            models.MetricsResponse,
            await self._send(_Call("GET", "/api/metrics", models.MetricsResponse, params)),
        )

    async def openapi(self) -> dict[str, Any]:
        return cast(dict[str, Any], await self._send(_Call("GET", "/api/openapi.json", None)))
