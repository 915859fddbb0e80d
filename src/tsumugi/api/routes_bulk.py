"""``POST /api/bulk`` and ``GET /api/bulk/{id}``: retry, cancel or reschedule every job a filter matches.

The original's bulk routes act on one page of 200 and report ``remaining``; they answer as
they always did. These act on the whole filter, in bounded batches, with a progress resource (ADR-0151).
"""
# A-49..A-53

from __future__ import annotations

import asyncio
from typing import Final

from starlette.responses import Response

from tsumugi.api.bulk_runner import step, validate_bulk_action
from tsumugi.api.context import RequestContext
from tsumugi.api.shapes import BulkCount, BulkProgress
from tsumugi.api.wire import BodyError, error_response, json_response, read_json_body
from tsumugi.core.wire_format import new_local_ids
from tsumugi.ports import ShardNamespace
from tsumugi.storage.bulk_actions import BulkActions, BulkRecord

_DRIVERS: Final[set[asyncio.Task[None]]] = set()  # the background drivers, held so they are not collected


def progress_body(record: BulkRecord) -> BulkProgress:
    remaining = 0 if record.state == "done" else max(0, record.matched - record.processed)
    return {
        "id": record.id,
        "action": record.action,
        "state": record.state,
        "filter": record.selection,
        "matched": record.matched,
        "done": record.done,
        "failed": record.failed,
        "remaining": remaining,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    }


async def start_bulk(ctx: RequestContext) -> Response:
    try:
        spec = validate_bulk_action(await read_json_body(ctx.request))
    except BodyError as exc:
        return error_response(exc.message, 400)
    store = BulkActions(ctx.db)
    now = ctx.now_ms()
    count = await store.count(spec.filter, now)
    matched = count if spec.cap is None else min(count, spec.cap)
    if spec.dry_run:
        body: BulkCount = {"matched": matched}
        return json_response(body)
    record = BulkRecord(
        id=f"bulk_{new_local_ids(1)[0]}",
        action=spec.action,
        selection=spec.selection,
        options={**spec.options, "cap": spec.cap},
        state="running" if matched else "done",
        matched=matched,
        done=0,
        failed=0,
        cursor_created_at=None,
        cursor_id=None,
        snapshot_at=now,
        created_at=now,
        updated_at=now,
    )
    await store.create(record)
    if matched:
        _drive(ctx, store, record.id)
    return json_response(progress_body(record), 202)


async def get_bulk(ctx: RequestContext) -> Response:
    store = BulkActions(ctx.db)
    record = await store.get(ctx.params["id"])
    if record is None:
        return error_response("not found", 404)
    if record.state == "running":
        await step(store, ctx.shards, record.id, ctx.now_ms())  # a poll moves it on when no one else does
        record = await store.get(record.id) or record
    return json_response(progress_body(record))


def _drive(ctx: RequestContext, store: BulkActions, bulk_id: str) -> None:
    """Run batches in the background while the process lives; polls take over if it does not."""
    shards: ShardNamespace = ctx.shards
    clock = ctx.options.clock

    async def drive() -> None:
        while await step(store, shards, bulk_id, clock.now()):
            await asyncio.sleep(0)  # let requests in between batches

    task = asyncio.get_running_loop().create_task(drive())
    _DRIVERS.add(task)
    task.add_done_callback(_DRIVERS.discard)
