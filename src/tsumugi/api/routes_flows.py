"""Runs, flows and schedules."""
# A-57..A-65, F-85..F-89, S-21

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Final

from starlette.responses import Response

from tsumugi.api.context import RequestContext
from tsumugi.api.routes_mutations import mutation_response
from tsumugi.api.shapes import (
    Created,
    FlowList,
    RunDetail,
    RunDetailResponse,
    RunList,
    RunNode,
    RunSummary,
    Schedule,
    ScheduleList,
    pick,
)
from tsumugi.api.validation import validate_start_run
from tsumugi.api.wire import (
    BodyError,
    error_response,
    json_response,
    optional_text,
    parse_paging,
    read_json_body,
)
from tsumugi.core.json_types import JsonValue
from tsumugi.ports import SqlValue
from tsumugi.storage import read_model_runs as runs_sql

RUN_GONE: Final = "run is no longer available: removed from the coordinator after the retention period"
_RUN_ID: Final = re.compile(r"[A-Za-z0-9_-]+:[A-Za-z0-9_-]+")


async def list_flows(ctx: RequestContext) -> Response:
    body: FlowList = {"flows": sorted(ctx.options.flows)}
    return json_response(body)


async def list_runs(ctx: RequestContext) -> Response:
    limit, offset = parse_paging(ctx.query("limit"), ctx.query("offset"))
    rows, total = await runs_sql.list_runs(
        ctx.db, optional_text(ctx.query("state")), optional_text(ctx.query("flow")), limit, offset
    )
    body: RunList = {"runs": [pick(RunSummary, r) for r in rows], "total": total}
    return json_response(body)


def _after(text: SqlValue) -> list[str]:
    """stored JSON array text; malformed -> []."""
    #
    try:
        value: JsonValue = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _node(row: Mapping[str, SqlValue]) -> RunNode:
    return pick(RunNode, row, id=row["node_id"], container=bool(row["container"]), after=_after(row["after"]))


async def get_run(ctx: RequestContext) -> Response:
    found = await runs_sql.get_run(ctx.db, ctx.params["id"])
    if found is None:
        return error_response("not found", 404)
    run, nodes = found
    detail = pick(RunDetail, run, retryable=run["state"] == "FAILED")
    body: RunDetailResponse = {"run": detail, "nodes": [_node(n) for n in nodes]}
    return json_response(body)


async def start_run(ctx: RequestContext) -> Response:
    start = ctx.options.start_run
    if not ctx.options.flows or start is None:
        return error_response("run creation is not available", 501)  # before the body
    try:
        accepted = validate_start_run(await read_json_body(ctx.request), ctx.options.flows)
    except BodyError as exc:
        return error_response(exc.message, 400)
    run_id = await start(ctx.env, accepted["flow"], accepted["input"], accepted["id"], accepted["deadlineMs"])
    body: Created = {"id": run_id}
    return json_response(body, 201)


async def _control(ctx: RequestContext, action: str) -> Response:
    control = ctx.options.run_control
    if not ctx.options.flows or control is None:
        return error_response("run control is not available", 501)  # before the id
    run_id = ctx.params["id"]
    if not _RUN_ID.fullmatch(run_id):
        return error_response("invalid run id", 400)
    return mutation_response(await control(ctx.env, run_id, action), RUN_GONE)


async def retry_run(ctx: RequestContext) -> Response:
    return await _control(ctx, "retry")


async def cancel_run(ctx: RequestContext) -> Response:
    return await _control(ctx, "cancel")


async def list_schedules(ctx: RequestContext) -> Response:
    read = ctx.options.schedules
    if read is None:
        return error_response("schedules are not available", 501)
    items = sorted(await read(ctx.env), key=lambda s: str(s.get("name")))
    body: ScheduleList = {"schedules": [pick(Schedule, item) for item in items]}
    return json_response(body)
