"""Operations: diagnostics, binding policy and metrics."""
# A-55, J-176, J-185, A-66..A-68

from __future__ import annotations

import asyncio
import math
import re
from typing import Final, TypeGuard

from starlette.responses import Response

from tsumugi.api.context import RequestContext
from tsumugi.api.shapes import (
    BindingMetrics,
    Diagnostics,
    MetricsPoint,
    MetricsResponse,
    PolicyResult,
    binding_diagnostics,
    pick,
)
from tsumugi.api.wire import (
    BodyError,
    error_response,
    is_finite_number,
    js_number,
    json_response,
    read_json_body,
)
from tsumugi.core.input_bounds import MAX_SAFE_INTEGER
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.errors import MetricsUpstreamError

MAX_METRICS_HOURS: Final = 720  # 30 days
DEFAULT_METRICS_HOURS: Final = 24
_BINDING_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COUNT_FIELDS: Final = ("concurrency", "perKeyConcurrency", "reaperGraceMs")
_RATE_FIELDS: Final = ("rate", "perKeyRate")


async def get_diagnostics(ctx: RequestContext) -> Response:
    """asked live from shard 0 of every registered binding, in registration order."""
    # A-55, J-185
    names = list(ctx.options.performers or ())
    answers = await asyncio.gather(*(ctx.shards.get(f"{name}#0").diagnostics() for name in names))
    bindings = {name: binding_diagnostics(answer) for name, answer in zip(names, answers, strict=True)}
    body: Diagnostics = {"shard": 0, "bindings": bindings}
    return json_response(body)


def _is_count(value: object) -> TypeGuard[int | float]:
    return is_finite_number(value) and float(value).is_integer() and value >= 0


def _rate(name: str, value: JsonValue) -> JsonObject | None:
    """A rate as the stores hold it, or None (no rate)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BodyError(f"{name} must be an object or null")
    counts: dict[str, int] = {}
    for part in ("tokens", "intervalMs"):
        item = value.get(part)
        if not _is_count(item) or item <= 0:
            raise BodyError(f"{name}.{part} must be a positive integer")
        counts[part] = int(min(item, MAX_SAFE_INTEGER))  # ADR-0133: what the stores can hold
    return {"tokens": counts["tokens"], "intervalMs": counts["intervalMs"]}


def validate_policy_patch(body: JsonValue) -> JsonObject:
    """only the given fields change; at least one must be given (ADR-0067)."""
    # J-176
    if not isinstance(body, dict):
        raise BodyError("body must be an object")
    patch: JsonObject = {}
    if "paused" in body:
        paused = body["paused"]
        if not isinstance(paused, bool):
            raise BodyError("paused must be a boolean")
        patch["paused"] = paused
    for name in _COUNT_FIELDS:
        if name in body:
            count = body[name]
            if not _is_count(count):
                raise BodyError(f"{name} must be a non-negative integer")
            patch[name] = int(min(count, MAX_SAFE_INTEGER))  # ADR-0133: what the stores can hold
    for name in _RATE_FIELDS:
        if name in body:
            patch[name] = _rate(name, body[name])
    if "agingIntervalMs" in body:
        aging = body["agingIntervalMs"]
        if aging is not None and not (is_finite_number(aging) and aging > 0):
            raise BodyError("agingIntervalMs must be a positive number or null")
        patch["agingIntervalMs"] = aging
    if not patch:
        raise BodyError("body must contain at least one policy field")
    return patch


def _registered(ctx: RequestContext) -> str | None:
    binding = ctx.params["binding"]
    performers = ctx.options.performers
    return binding if performers is None or binding in performers else None


async def update_policy(ctx: RequestContext) -> Response:
    binding = _registered(ctx)
    if binding is None:
        return error_response(f"unknown binding: {ctx.params['binding']}", 404)
    try:
        patch = validate_policy_patch(await read_json_body(ctx.request))
    except BodyError as exc:
        return error_response(exc.message, 400)
    options = ctx.options.binding(binding)
    # ADR-0131: a shard that no enqueue reached yet knows only the defaults; it merges onto these
    static = options.static_settings
    results = await asyncio.gather(
        *(ctx.shards.get(f"{binding}#{n}").update_policy(patch, static) for n in range(options.shards))
    )
    body: PolicyResult = {"ok": True, "settings": results[0] if results else {}, "shards": options.shards}
    return json_response(body)


async def reset_policy(ctx: RequestContext) -> Response:
    binding = _registered(ctx)
    if binding is None:
        return error_response(f"unknown binding: {ctx.params['binding']}", 404)
    options = ctx.options.binding(binding)
    results = await asyncio.gather(
        *(
            ctx.shards.get(f"{binding}#{n}").reset_policy(options.static_settings)
            for n in range(options.shards)
        )
    )
    body: PolicyResult = {"ok": True, "settings": results[0] if results else {}, "shards": options.shards}
    return json_response(body)


def _metrics_window(ctx: RequestContext) -> tuple[int, str | None]:
    """hours (missing/empty -> 24, floored, 1..720) and an optional binding name."""
    #
    text = ctx.query("hours")
    hours = DEFAULT_METRICS_HOURS if text is None or text == "" else js_number(text)
    if not math.isfinite(hours) or hours < 1:
        raise BodyError("hours must be at least 1")
    if hours > MAX_METRICS_HOURS:
        raise BodyError("hours must not exceed 720")
    binding = ctx.query("binding") or None
    if binding is not None and not _BINDING_NAME.fullmatch(binding):
        raise BodyError("binding is not a valid name")
    return math.floor(hours), binding


async def get_metrics(ctx: RequestContext) -> Response:
    resolve = ctx.options.metrics
    reader = resolve(ctx.env) if resolve is not None else None
    if reader is None:
        return error_response("metrics is not configured", 501)  # before the query
    try:
        hours, binding = _metrics_window(ctx)
    except BodyError as exc:
        return error_response(exc.message, 400)
    try:
        report = await reader.read(hours, binding)
    except MetricsUpstreamError as exc:
        return error_response(str(exc), 502)  # A-68, M-12
    body: MetricsResponse = {
        "hours": hours,
        "bindings": [pick(BindingMetrics, item) for item in _entries(report, "bindings")],
        "series": [pick(MetricsPoint, point) for point in _entries(report, "series")],
    }
    return json_response(body)


def _entries(report: JsonMapping, name: str) -> list[JsonObject]:
    """A reader's list of points; the readers build it, so it holds objects only."""
    found = report.get(name)
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []
