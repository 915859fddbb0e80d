"""``POST /api/runs/{id}/events/{event}``: an event for a run's wait-for-event node (ADR-0148)."""

from __future__ import annotations

import json
import re
from typing import Final, NoReturn

from starlette.responses import Response

from tsumugi.api.context import RequestContext
from tsumugi.api.shapes import EventAccepted
from tsumugi.api.wire import error_response, json_response, read_body
from tsumugi.core.flow.waits import is_event_name
from tsumugi.core.json_types import JsonValue

_RUN_ID: Final = re.compile(r"[A-Za-z0-9_-]+:[A-Za-z0-9_-]+")
ALREADY_SATISFIED: Final = "already satisfied"
NOT_ALLOWED: Final = "not allowed in the current state"
NO_WAITER: Final = "no node of this run waits for this event"


async def send_run_event(ctx: RequestContext) -> Response:
    """The body is the payload (any JSON; an empty body is null); it becomes the node's result.

    200 when the waiting node took it, 202 when it is kept for a node that has not started waiting,
    409 when the node was already satisfied or the run or node no longer waits, 404 for an unknown run
    or an event no node waits for.
    """
    send = ctx.options.run_event
    if not ctx.options.flows or send is None:
        return error_response("run control is not available", 501)  # before the id
    run_id, event = ctx.params["id"], ctx.params["event"]
    if not _RUN_ID.fullmatch(run_id):
        return error_response("invalid run id", 400)
    if not is_event_name(event):
        return error_response("invalid event name", 400)
    try:
        payload = _payload(await read_body(ctx.request))
    except ValueError:
        return error_response("body must be valid JSON", 400)
    result = await send(ctx.env, run_id, event, payload)
    reason = result.get("reason")
    if result.get("ok"):
        answer: EventAccepted = {"accepted": True, "node": str(result["node"]), "state": str(result["state"])}
        return json_response(answer, 200 if result["state"] == "COMPLETED" else 202)
    if reason == "gone":
        return error_response("not found", 404)
    if reason == "unknown-event":
        return json_response({"accepted": False, "error": NO_WAITER}, 404)
    if reason == "invalid-payload":
        return error_response(str(result.get("error")), 400)
    error = ALREADY_SATISFIED if reason == "already-satisfied" else NOT_ALLOWED
    return json_response({"accepted": False, "node": result.get("node"), "error": error}, 409)


def _payload(raw: bytes) -> JsonValue:
    """The body as JSON, decoded as ``read_json_body`` does; an empty body is null (no payload)."""
    text = raw.decode("utf-8-sig", errors="replace")
    if not text.strip():
        return None
    payload: JsonValue = json.loads(text, parse_constant=_reject_constant)
    return payload


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"not JSON: {name}")  # NaN and Infinity are no JSON values
