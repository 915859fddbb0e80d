"""Job mutations through the shards: create, retry, cancel, reschedule, bulk."""
# A-38..A-53, J-131, J-134

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final

from starlette.responses import Response

from tsumugi.api.bulk_answers import changed_ids, refusals
from tsumugi.api.context import RequestContext
from tsumugi.api.shapes import BulkFailure, BulkResult, Created, Debounced, Dropped
from tsumugi.api.validation import BulkSelection, validate_bulk, validate_create_job, validate_reschedule
from tsumugi.api.wire import (
    BodyError,
    TooLargeError,
    error_response,
    json_response,
    read_json_body,
    refusal_response,
)
from tsumugi.core.enqueue_outcome import EnqueueOutcome
from tsumugi.core.input_bounds import clamp_instant
from tsumugi.core.json_types import JsonObject
from tsumugi.core.wire_format import parse_job_id
from tsumugi.errors import EnqueueError, InvalidJobIdError, PayloadTooLargeError
from tsumugi.storage import read_model_jobs as jobs_sql
from tsumugi.storage.read_model_jobs import JobFilter

NOT_ALLOWED: Final = "not allowed in the current state"
JOB_GONE: Final = "job is no longer available: removed from the coordinator after the retention period"


def mutation_response(result: Mapping[str, object], gone_message: str) -> Response:
    """ok -> 200, invalid-state -> 409, gone -> 410."""
    # J-131, A-43
    if result.get("ok"):
        body: JsonObject = {"ok": True}
        if result.get("requested"):
            body["requested"] = True  # J-135: a running job was asked to stop
        return json_response(body)
    if result.get("reason") == "gone":
        return refusal_response(gone_message, 410)
    return refusal_response(NOT_ALLOWED, 409)


def _shard_name(job_id: str) -> str | None:
    try:
        parsed = parse_job_id(job_id)
    except InvalidJobIdError:
        return None
    return f"{parsed.binding}#{parsed.shard}"


async def create_job(ctx: RequestContext) -> Response:
    enqueue = ctx.options.enqueue
    if enqueue is None:
        return error_response("job creation is not available", 501)  # before the body
    try:
        accepted = validate_create_job(await read_json_body(ctx.request), ctx.options.performers)
    except BodyError as exc:
        return error_response(exc.message, 400)
    keyed = ctx.options.enqueue_outcome if _KEYED_FIELDS & accepted.keys() else None
    try:
        if keyed is not None:
            return _outcome_response(await keyed(ctx.env, accepted))
        job_id = await enqueue(ctx.env, accepted)
    except PayloadTooLargeError as exc:
        raise TooLargeError(str(exc)) from None  # ADR-0133: 413
    except (EnqueueError, InvalidJobIdError) as exc:
        return error_response(str(exc), 400)  # ADR-0066: refused input is a 400, never a 500
    created: Created = {"id": job_id}
    return json_response(created, 201)


_KEYED_FIELDS: Final = frozenset({"debounceKey", "throttleKey"})


def _outcome_response(outcome: EnqueueOutcome) -> Response:
    """201 ``{id}`` for a new or existing job; 200 with ``debounced`` or ``dropped`` (ADR-0149, ADR-0150)."""
    if outcome.dropped:
        dropped: Dropped = {"id": None, "dropped": True, "runAfter": outcome.run_after}
        return json_response(dropped, 200)
    if outcome.debounced and outcome.id is not None:
        debounced: Debounced = {"id": outcome.id, "debounced": True, "runAfter": outcome.run_after}
        return json_response(debounced, 200)
    created: Created = {"id": str(outcome.id)}
    return json_response(created, 201)


async def _single(ctx: RequestContext, action: str) -> Response:
    job_id = ctx.params["id"]
    name = _shard_name(job_id)
    if name is None:
        return error_response("invalid job id", 400)
    shard = ctx.shards.get(name)
    result = await (shard.retry(job_id) if action == "retry" else shard.cancel(job_id))
    return mutation_response(result, JOB_GONE)


async def retry_job(ctx: RequestContext) -> Response:
    return await _single(ctx, "retry")


async def cancel_job(ctx: RequestContext) -> Response:
    return await _single(ctx, "cancel")


async def reschedule_job(ctx: RequestContext) -> Response:
    try:
        accepted = validate_reschedule(await read_json_body(ctx.request))  # before the id
    except BodyError as exc:
        return error_response(exc.message, 400)
    job_id = ctx.params["id"]
    name = _shard_name(job_id)
    if name is None:
        return error_response("invalid job id", 400)
    run_at = accepted.get("runAt")
    if run_at is None:
        run_at = ctx.now_ms() + accepted.get("delayMs", 0)  # request time + delayMs
    # Instants stay within the integers JS and D1 represent exactly (ADR-0066), and within a Date (ADR-0133).
    run_at_ms = int(clamp_instant(run_at))
    result = await ctx.shards.get(name).reschedule(
        job_id, run_at=run_at_ms, priority=accepted.get("priority")
    )
    return mutation_response(result, JOB_GONE)


async def _select(ctx: RequestContext, selection: BulkSelection) -> tuple[list[str], int]:
    if selection.ids is not None:
        return list(selection.ids), 0  # ids mode has nothing remaining
    flt = JobFilter(
        states=selection.states,
        binding=selection.binding,
        unique_key=selection.unique_key,
        concurrency_key=selection.concurrency_key,
        created_from=selection.created_from,
        created_to=selection.created_to,
    )
    ids, total = await jobs_sql.select_for_bulk(ctx.db, flt, selection.limit)
    return ids, max(0, total - len(ids))


async def _bulk(ctx: RequestContext, action: str) -> Response:
    try:
        selection = validate_bulk(await read_json_body(ctx.request), action)
    except BodyError as exc:
        return error_response(exc.message, 400)
    ids, remaining = await _select(ctx, selection)
    groups: dict[str, list[str]] = {}
    invalid: list[BulkFailure] = []
    for job_id in ids:
        name = _shard_name(job_id)
        if name is None:
            invalid.append({"id": job_id, "reason": "invalid-id"})
        else:
            groups.setdefault(name, []).append(job_id)
    # one batch call per coordinator, concurrently, results in group order.
    results = await asyncio.gather(
        *(ctx.shards.get(name).mutate_many(action, group) for name, group in groups.items())
    )
    ok = [job_id for answer in results for job_id in changed_ids(answer)]
    failed = [refusal for answer in results for refusal in refusals(answer)]
    body: BulkResult = {"ok": ok, "failed": failed + invalid, "remaining": remaining}
    return json_response(body)


async def bulk_retry(ctx: RequestContext) -> Response:
    return await _bulk(ctx, "retry")


async def bulk_cancel(ctx: RequestContext) -> Response:
    return await _bulk(ctx, "cancel")
