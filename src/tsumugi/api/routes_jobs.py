"""Read-model job routes: list, detail, stats and bindings."""
# A-28..A-37, A-54, A-56

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.responses import Response

from tsumugi.api.context import RequestContext
from tsumugi.api.shapes import (
    AttemptRecord,
    BindingList,
    JobDetail,
    JobDetailResponse,
    JobList,
    JobSummary,
    Stats,
    is_attempt_record,
    pick,
)
from tsumugi.api.wire import error_response, json_response, optional_text, parse_paging, query_bound
from tsumugi.core.json_types import JsonValue
from tsumugi.core.states import RETRYABLE_STATES
from tsumugi.ports import SqlValue
from tsumugi.storage import read_model_jobs as jobs_sql
from tsumugi.storage.read_model_jobs import JobFilter, JobPage


def _retryable(ctx: RequestContext, row: Mapping[str, SqlValue], now_ms: int) -> bool:
    """FAILED/STALLED rows inside the binding's failed retention (always, when standalone)."""
    #
    if row["state"] not in RETRYABLE_STATES:
        return False
    if ctx.options.performers is None:
        return True
    window_ms = ctx.options.binding(str(row["binding"])).failed_retention_ms
    updated_at = row["updated_at"]  # an integer column, never null
    return isinstance(updated_at, int | float) and int(updated_at) > now_ms - window_ms


def _summary(ctx: RequestContext, row: Mapping[str, SqlValue], now_ms: int) -> JobSummary:
    return pick(JobSummary, row, retryable=_retryable(ctx, row, now_ms))


async def list_jobs(ctx: RequestContext) -> Response:
    sort = ctx.query("sort")
    limit, offset = parse_paging(ctx.query("limit"), ctx.query("offset"))
    state = optional_text(ctx.query("state"))
    flt = JobFilter(
        states=(state,) if state is not None else (),
        binding=optional_text(ctx.query("binding")),
        id=optional_text(ctx.query("id")),
        unique_key=optional_text(ctx.query("unique_key")),
        concurrency_key=optional_text(ctx.query("concurrency_key")),
        created_from=query_bound(ctx.query("created_from")),
        created_to=query_bound(ctx.query("created_to")),
    )
    page = JobPage(
        sort=sort if sort in jobs_sql.SORT_COLUMNS else "updated_at",
        ascending=ctx.query("order") == "asc",
        limit=limit,
        offset=offset,
    )
    rows, total = await jobs_sql.list_jobs(ctx.db, flt, page)
    now_ms = ctx.now_ms()
    body: JobList = {"jobs": [_summary(ctx, r, now_ms) for r in rows], "total": total}
    return json_response(body)


def _stored_log(text: SqlValue) -> list[AttemptRecord] | None:
    """The stored log when it is a non-empty JSON array of attempt records, else None."""
    if not isinstance(text, str):
        return None
    try:
        entries: JsonValue = json.loads(text)
    except ValueError:
        return None
    if not isinstance(entries, list) or not entries:
        return None
    records = [entry for entry in entries if is_attempt_record(entry)]
    return records if len(records) == len(entries) else None


def _attempts_log(row: Mapping[str, SqlValue]) -> list[AttemptRecord]:
    """the stored log, or one synthesised entry for a completed job without one."""
    #
    stored = _stored_log(row.get("attempts_log"))
    # a malformed log never fails the request; it is replaced as if there were none.
    if stored is not None:
        return stored
    attempts, dispatched_at, updated_at = row["attempts"], row["dispatched_at"], row["updated_at"]
    # Integer columns; only dispatched_at may be null.
    if row["state"] == "COMPLETED" and isinstance(dispatched_at, int) and isinstance(updated_at, int):
        return [
            {
                "attempt": attempts if isinstance(attempts, int) and attempts else 1,
                "state": "COMPLETED",
                "started_at": dispatched_at,
                "finished_at": updated_at,
                "error": None,
            }
        ]
    return []


async def get_job(ctx: RequestContext) -> Response:
    row = await jobs_sql.get_job(ctx.db, ctx.params["id"])
    if row is None:
        return error_response("not found", 404)
    summary = _summary(ctx, row, ctx.now_ms())
    detail = pick(JobDetail, row, **summary, attempts_log=_attempts_log(row))
    body: JobDetailResponse = {"job": detail}
    return json_response(body)


async def get_stats(ctx: RequestContext) -> Response:
    by_state = await jobs_sql.count_by_state(ctx.db)
    oldest = await jobs_sql.oldest_scheduled_created_at(ctx.db)
    # A-54 [Q]: measured from creation, not from run_after.
    oldest_ms = None if oldest is None else max(0, ctx.now_ms() - oldest)
    body: Stats = {"byState": by_state, "oldestScheduledMs": oldest_ms}
    return json_response(body)


async def list_bindings(ctx: RequestContext) -> Response:
    performers = ctx.options.performers
    names = sorted(performers) if performers is not None else await jobs_sql.distinct_bindings(ctx.db)
    body: BindingList = {"bindings": names}
    return json_response(body)
