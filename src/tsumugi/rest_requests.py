"""The keyword options of the REST client's calls, by their wire names, and the bodies built from them.

List queries and bulk filters keep the server's snake_case query names; bulk actions and policy patches
keep the camelCase body fields, so ``client.start_bulk(action="retry", dryRun=True)`` reads as the wire.
"""
# api.md Part A

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, Required, TypeAlias

from typing_extensions import TypedDict

from tsumugi.api import models
from tsumugi.core.json_types import JsonObject

__all__ = [
    "BulkActionBody",
    "BulkFilterFields",
    "BulkSelection",
    "JobOptions",
    "JobQuery",
    "PolicyPatchBody",
    "QueryValue",
    "RateSpec",
    "RunQuery",
    "Throttle",
    "ThrottleSpec",
    "job_options",
    "query",
    "reschedule_body",
    "start_body",
]

QueryValue: TypeAlias = str | int | float


class JobQuery(TypedDict, total=False):
    """``GET /api/jobs``: exact filters, a created range (epoch ms), order and paging; None means unset."""

    state: str | None
    binding: str | None
    id: str | None
    unique_key: str | None
    concurrency_key: str | None
    created_from: int | None
    created_to: int | None
    sort: str | None
    order: Literal["asc", "desc"] | None
    limit: int | None
    offset: int | None


class RunQuery(TypedDict, total=False):
    """``GET /api/runs``: filters and paging; None means unset."""

    state: str | None
    flow: str | None
    limit: int | None
    offset: int | None


class BulkSelection(TypedDict, total=False):
    """``POST /api/jobs/bulk-retry|bulk-cancel``: ``ids`` (every other field is then ignored) or a filter."""

    ids: list[str]
    binding: str
    state: str
    unique_key: str
    concurrency_key: str
    created_from: int | float
    created_to: int | float
    limit: int


class BulkFilterFields(TypedDict, total=False):
    """The filter of a bulk action: exact matches, and a created range (epoch ms)."""

    binding: str
    state: str
    id: str
    unique_key: str
    concurrency_key: str
    created_from: int | float
    created_to: int | float


class BulkActionBody(TypedDict, total=False):
    """``POST /api/bulk`` besides ``dryRun``: the action, its filter and its options."""

    action: Required[Literal["retry", "cancel", "reschedule"]]
    filter: BulkFilterFields
    cap: int
    includeRunning: bool
    runAt: int | float
    delayMs: int | float
    priority: int | float


class RateSpec(TypedDict):
    """``tokens`` per ``intervalMs``."""

    tokens: int
    intervalMs: int


class PolicyPatchBody(TypedDict, total=False):
    """``POST /api/bindings/{binding}/policy``: the fields to change; a null rate removes that rate."""

    paused: bool
    concurrency: int
    perKeyConcurrency: int
    reaperGraceMs: int
    rate: RateSpec | None
    perKeyRate: RateSpec | None
    agingIntervalMs: int | float | None


class ThrottleSpec(TypedDict):
    """``tokens`` jobs per ``intervalMs`` for one throttle key; the excess is delayed (default) or dropped."""

    tokens: int
    intervalMs: int | float
    onExcess: NotRequired[Literal["delay", "drop"]]


Throttle: TypeAlias = ThrottleSpec | models.ThrottleRequest


class JobOptions(TypedDict, total=False):
    """The options of ``POST /api/jobs`` besides binding and payload, as the client sends them."""

    maxAttempts: int
    delayMs: int
    priority: int | float
    concurrencyKey: str
    uniqueKey: str
    expiresInMs: int
    debounceKey: str
    debounceMs: int | float
    debounceMaxMs: int | float
    throttleKey: str
    throttle: ThrottleSpec


def query(values: Mapping[str, object]) -> dict[str, QueryValue]:
    """The given query parameters; unset (None) ones are left out."""
    return {k: v for k, v in values.items() if isinstance(v, str | int | float)}


def _throttle_spec(throttle: Throttle) -> ThrottleSpec:
    if isinstance(throttle, models.ThrottleRequest):
        return {"tokens": throttle.tokens, "intervalMs": throttle.intervalMs, "onExcess": throttle.onExcess}
    return throttle


def job_options(
    max_attempts: int | None, delay_ms: int | None, priority: int | float | None, concurrency_key: str | None,
    unique_key: str | None, expires_in_ms: int | None, debounce_key: str | None,
    debounce_ms: int | float | None, debounce_max_ms: int | float | None, throttle_key: str | None,
    throttle: Throttle | None,
) -> JobOptions:  # fmt: skip
    """The camelCase options of a create; unset ones are left out (the server refuses a null)."""
    options: JobOptions = {}
    if max_attempts is not None:
        options["maxAttempts"] = max_attempts
    if delay_ms is not None:
        options["delayMs"] = delay_ms
    if priority is not None:
        options["priority"] = priority
    if concurrency_key is not None:
        options["concurrencyKey"] = concurrency_key
    if unique_key is not None:
        options["uniqueKey"] = unique_key
    if expires_in_ms is not None:
        options["expiresInMs"] = expires_in_ms
    if debounce_key is not None:
        options["debounceKey"] = debounce_key
    if debounce_ms is not None:
        options["debounceMs"] = debounce_ms
    if debounce_max_ms is not None:
        options["debounceMaxMs"] = debounce_max_ms
    if throttle_key is not None:
        options["throttleKey"] = throttle_key
    if throttle is not None:
        options["throttle"] = _throttle_spec(throttle)
    return options


def reschedule_body(run_at: int | None, delay_ms: int | None, priority: int | float | None) -> JsonObject:
    body: JsonObject = {}
    if run_at is not None:
        body["runAt"] = run_at
    if delay_ms is not None:
        body["delayMs"] = delay_ms
    if priority is not None:
        body["priority"] = priority
    return body


def start_body(flow: str, input: object, run_id: str | None, deadline_ms: int | None) -> dict[str, object]:
    body: dict[str, object] = {"flow": flow, "input": input}
    if run_id is not None:
        body["id"] = run_id
    if deadline_ms is not None:
        body["deadlineMs"] = deadline_ms
    return body
