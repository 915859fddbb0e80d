"""A typed REST client for Tsumugi's ``/api``, sync and async, on httpx.

Mutations answer with values, like the shard RPC: ``{"ok": True}`` (plus ``requested``),
or ``{"ok": False, "reason": "invalid-state" | "gone"}`` for 409/410. Every other non-2xx answer raises
``RestApiError`` with the status and the server's ``error`` text. Read answers are the pydantic models of
``tsumugi.api.models``; the dict answers are the typed dicts of ``tsumugi.rest_answers``.
"""
# api.md Part A, J-131

from __future__ import annotations

from typing import Literal, TypeVar, overload

import httpx
from typing_extensions import Unpack

from tsumugi.api import models
from tsumugi.rest_answers import (
    BulkCount,
    BulkProgress,
    EventAnswer,
    JobAnswer,
    MutationAnswer,
    OpenApiDocument,
)
from tsumugi.rest_calls import DEFAULT_TIMEOUT_S, Call, Calls, RestApiError, headers, result
from tsumugi.rest_client_async import AsyncTsumugiClient
from tsumugi.rest_requests import (
    BulkActionBody,
    BulkSelection,
    JobQuery,
    PolicyPatchBody,
    RunQuery,
    Throttle,
    job_options,
    reschedule_body,
    start_body,
)

__all__ = ["DEFAULT_TIMEOUT_S", "AsyncTsumugiClient", "RestApiError", "TsumugiClient"]

T = TypeVar("T")


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
            base_url=base_url, headers=headers(token), timeout=timeout_s, transport=transport
        )

    def __enter__(self) -> TsumugiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: Call[T]) -> T:
        body = call.body if call.method == "POST" else None
        response = self._http.request(call.method, call.path, params=dict(call.params), json=body)
        return result(call, response)

    def list_jobs(self, **filters: Unpack[JobQuery]) -> models.JobList:
        """One page of ``GET /api/jobs``: ``state``, ``binding``, ``sort``, ``order``, ``limit``, ..."""
        return self._send(Calls.list_jobs(filters))

    def get_job(self, job_id: str) -> models.JobDetail:
        return self._send(Calls.get_job(job_id)).job

    @overload
    def create_job(
        self, binding: str, payload: object, *, max_attempts: int | None = None, delay_ms: int | None = None,
        priority: float | None = None, concurrency_key: str | None = None, unique_key: str | None = None,
        expires_in_ms: int | None = None, debounce_key: None = None, debounce_ms: None = None,
        debounce_max_ms: None = None, throttle_key: None = None, throttle: None = None,
    ) -> str: ...  # fmt: skip

    @overload
    def create_job(
        self, binding: str, payload: object, *, max_attempts: int | None = None, delay_ms: int | None = None,
        priority: float | None = None, concurrency_key: str | None = None, unique_key: str | None = None,
        expires_in_ms: int | None = None, debounce_key: str, debounce_ms: float,
        debounce_max_ms: float | None = None, throttle_key: str | None = None,
        throttle: Throttle | None = None,
    ) -> JobAnswer: ...  # fmt: skip

    @overload
    def create_job(
        self, binding: str, payload: object, *, max_attempts: int | None = None, delay_ms: int | None = None,
        priority: float | None = None, concurrency_key: str | None = None, unique_key: str | None = None,
        expires_in_ms: int | None = None, debounce_key: str | None = None, debounce_ms: float | None = None,
        debounce_max_ms: float | None = None, throttle_key: str, throttle: Throttle | None = None,
    ) -> JobAnswer: ...  # fmt: skip

    def create_job(
        self, binding: str, payload: object, *, max_attempts: int | None = None, delay_ms: int | None = None,
        priority: float | None = None, concurrency_key: str | None = None, unique_key: str | None = None,
        expires_in_ms: int | None = None, debounce_key: str | None = None, debounce_ms: float | None = None,
        debounce_max_ms: float | None = None, throttle_key: str | None = None,
        throttle: Throttle | None = None,
    ) -> str | JobAnswer:  # fmt: skip
        """Enqueue a job; its id, or with a debounce or throttle key the server's answer.

        With ``debounce_key`` (and ``debounce_ms``) a waiting job with that key takes the payload instead
        of a new job being made (``models.Debounced``); with ``throttle_key`` a throttle may drop the job
        (``models.Dropped``, whose ``id`` is None). A new job is ``models.Created``.
        """
        options = job_options(
            max_attempts, delay_ms, priority, concurrency_key, unique_key, expires_in_ms, debounce_key,
            debounce_ms, debounce_max_ms, throttle_key, throttle,
        )  # fmt: skip
        if debounce_key is None and throttle_key is None:
            return self._send(Calls.create_job(binding, payload, options)).id
        return self._send(Calls.enqueue_job(binding, payload, options))

    def retry_job(self, job_id: str) -> MutationAnswer:
        return self._send(Calls.job_action(job_id, "retry"))

    def cancel_job(self, job_id: str) -> MutationAnswer:
        return self._send(Calls.job_action(job_id, "cancel"))

    def reschedule_job(
        self,
        job_id: str,
        *,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: float | None = None,
    ) -> MutationAnswer:
        body = reschedule_body(run_at, delay_ms, priority)
        return self._send(Calls.job_action(job_id, "reschedule", body))

    def bulk_retry(self, **selection: Unpack[BulkSelection]) -> models.BulkResult:
        """``ids=[...]`` or filter fields."""
        return self._send(Calls.bulk("retry", selection))

    def bulk_cancel(self, **selection: Unpack[BulkSelection]) -> models.BulkResult:
        return self._send(Calls.bulk("cancel", selection))

    @overload
    def start_bulk(self, *, dryRun: Literal[True], **body: Unpack[BulkActionBody]) -> BulkCount: ...

    @overload
    def start_bulk(
        self, *, dryRun: Literal[False] | None = None, **body: Unpack[BulkActionBody]
    ) -> BulkProgress: ...

    def start_bulk(
        self, *, dryRun: bool | None = None, **body: Unpack[BulkActionBody]
    ) -> BulkCount | BulkProgress:
        """``POST /api/bulk`` (ADR-0151): ``action``, ``filter``, ``cap``, ``includeRunning``, ...

        ``dryRun=True`` only counts the jobs (``{matched}``); otherwise the action starts and its progress
        is the answer, which ``bulk_progress`` polls.
        """
        if dryRun:
            return self._send(Calls.count_bulk(body))
        return self._send(Calls.start_bulk(body, dryRun))

    def bulk_progress(self, bulk_id: str) -> BulkProgress:
        """``GET /api/bulk/{id}``: ``{state, matched, done, failed, remaining, ...}``; a poll moves it on."""
        return self._send(Calls.bulk_progress(bulk_id))

    def stats(self) -> models.Stats:
        return self._send(Calls.stats())

    def diagnostics(self) -> models.Diagnostics:
        return self._send(Calls.diagnostics())

    def bindings(self) -> list[str]:
        return self._send(Calls.bindings()).bindings

    def update_policy(self, binding: str, **patch: Unpack[PolicyPatchBody]) -> models.PolicyResult:
        """The policy's camelCase fields (``paused``, ``concurrency``, ``perKeyConcurrency``, ...)."""
        return self._send(Calls.update_policy(binding, patch))

    def reset_policy(self, binding: str) -> models.PolicyResult:
        return self._send(Calls.reset_policy(binding))

    def flows(self) -> list[str]:
        return self._send(Calls.flows()).flows

    def list_runs(self, **filters: Unpack[RunQuery]) -> models.RunList:
        return self._send(Calls.list_runs(filters))

    def get_run(self, run_id: str) -> models.RunDetailResponse:
        return self._send(Calls.get_run(run_id))

    def start_run(
        self, flow: str, input: object, *, run_id: str | None = None, deadline_ms: int | None = None
    ) -> str:
        return self._send(Calls.start_run(start_body(flow, input, run_id, deadline_ms))).id

    def retry_run(self, run_id: str) -> MutationAnswer:
        return self._send(Calls.run_action(run_id, "retry"))

    def cancel_run(self, run_id: str) -> MutationAnswer:
        return self._send(Calls.run_action(run_id, "cancel"))

    def send_event(self, run_id: str, event: str, payload: object = None) -> EventAnswer:
        """Send ``event`` to the run; ``payload`` becomes the waiting node's result (ADR-0148).

        Returns ``{"accepted": True, "node", "state"}`` (state COMPLETED, or PENDING when the event is
        kept until the node waits) or ``{"accepted": False, "error", "node"?}`` when refused (already
        satisfied, not allowed in the current state, no node waits for it). An unknown run raises.
        """
        return self._send(Calls.run_event(run_id, event, payload))

    def schedules(self) -> list[models.Schedule]:
        return self._send(Calls.schedules()).schedules

    def metrics(self, hours: int | None = None, binding: str | None = None) -> models.MetricsResponse:
        return self._send(Calls.metrics(hours, binding))

    def openapi(self) -> OpenApiDocument:
        return self._send(Calls.openapi())
