"""Remote performers over service bindings: the calling side and the serving side.

The caller hands the performer a JS context object: ``jobId``, ``attempt``, ``idempotencyKey``,
``deadlineAt`` (a timestamp, since abort signals cannot cross RPC), ``traceparent``, and the
callbacks ``heartbeat(progress)`` and ``spawn(id, binding, payload, options)``. Both callbacks are remote
calls on the serving side, so a remote performer must await them.
"""
# J-62, J-63, J-75

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tsumugi.core.json_types import JsonValue
from tsumugi.payloads import dump_result, types_of
from tsumugi.performer import HeartbeatResult, JobContext, Performer
from tsumugi.runtimes.cloudflare.js_conversion import (
    js_function,
    py_optional_object,
    to_js_value,
    to_py_value,
)
from tsumugi.runtimes.cloudflare.js_objects import JsValue, PerformerFetcher, RemoteContext


class RemotePerformer:
    """A performer in another Worker, reached through ``env.<BINDING>`` (a service binding)."""

    # J-61

    __slots__ = ("_fetcher",)

    def __init__(self, fetcher: PerformerFetcher) -> None:
        self._fetcher = fetcher

    async def perform(self, payload: object, ctx: JobContext) -> JsonValue:
        async def heartbeat(progress: JsValue = None) -> JsValue:
            beat = await ctx.heartbeat(to_py_value(progress))
            return to_js_value({"ok": True, "cancelRequested": beat.cancel_requested})

        def spawn(id: JsValue, binding: JsValue, child_payload: JsValue, options: JsValue = None) -> None:
            ctx.spawn(str(id), str(binding), to_py_value(child_payload), py_optional_object(options))

        js_ctx = to_js_value(
            {
                "jobId": ctx.job_id,
                "attempt": ctx.attempt,
                "idempotencyKey": ctx.idempotency_key,
                "deadlineAt": ctx.deadline_at,
                "traceparent": ctx.traceparent,
                "heartbeat": js_function(heartbeat),
                "spawn": js_function(spawn),
            }
        )
        return to_py_value(await self._fetcher.perform(to_js_value(payload), js_ctx))


class RemoteJobContext(JobContext):
    """The ``ctx`` a served performer sees: heartbeat and spawn call back into the calling Worker."""

    __slots__ = ("_js_ctx",)

    def __init__(self, js_ctx: RemoteContext) -> None:
        async def heartbeat(progress: object = None) -> HeartbeatResult:
            answer = to_py_value(await js_ctx.heartbeat(to_js_value(progress)))
            cancel = answer.get("cancelRequested") if isinstance(answer, dict) else None
            return HeartbeatResult(cancel_requested=bool(cancel))

        traceparent = to_py_value(getattr(js_ctx, "traceparent", None))

        super().__init__(
            job_id=str(js_ctx.jobId),
            attempt=int(js_ctx.attempt),
            deadline_at=int(js_ctx.deadlineAt),
            heartbeat=heartbeat,
            traceparent=traceparent if isinstance(traceparent, str) else None,
        )
        self._js_ctx = js_ctx

    async def spawn_remote(
        self, id: str, binding: str, payload: object, options: Mapping[str, object] | None = None
    ) -> None:
        """Ship a child-node request to the calling Worker now (await it, or it is lost)."""
        # J-63
        await self._js_ctx.spawn(id, binding, to_js_value(payload), to_js_value(options or {}))


# Any: the performer's payload type is whatever its codec decodes to, known only at run time (ADR-0140).
async def serve_perform(performer: Performer[Any, Any], payload: JsValue, js_ctx: RemoteContext) -> JsValue:
    """Run a served performer's ``perform`` for a caller in another Worker; spawns travel back.

    The payload arrives decoded into the performer's payload type and the result leaves as its JSON,
    as for a performer of the calling Worker (ADR-0140).
    """
    # J-63
    ctx = RemoteJobContext(js_ctx)
    types = types_of(type(performer))
    name = type(performer).__name__
    result = await performer.perform(types.decode_payload(name, to_py_value(payload)), ctx)
    for request in ctx.spawns:
        await ctx.spawn_remote(request.id, request.binding, request.payload, request.options)
    return to_js_value(dump_result(name, result, types))
