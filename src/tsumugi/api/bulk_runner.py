"""Bulk actions over a whole filter: validation and one bounded batch at a time (ADR-0151).

A batch takes the next ``BATCH_SIZE`` matching jobs after the cursor, applies the action through their
shards with the per-job rules (retry, cancel, reschedule answer as they do one by one), and stores the
counts and the cursor. Batches run on the request that starts the action, then in the background while
the process lives, and on every poll of the progress resource whose lease is free: so an action resumes
after a restart, and on a Worker, where nothing outlives a request, polling drives it.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Final

from tsumugi.api.bulk_answers import counted
from tsumugi.api.validation import BULK_MAX_IDS
from tsumugi.api.wire import BodyError, is_finite_number
from tsumugi.core.input_bounds import clamp_duration, clamp_instant, clamp_safe, well_formed
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.core.wire_format import parse_job_id
from tsumugi.errors import InvalidJobIdError
from tsumugi.ports import ShardNamespace
from tsumugi.storage.bulk_actions import BulkActions, BulkRecord
from tsumugi.storage.read_model_jobs import JobFilter

BATCH_SIZE: Final = BULK_MAX_IDS  # the same bound as one bulk request: one mutate_many per shard per batch
LEASE_MS: Final = 10_000  # a batch of 200 takes well under a second; a crashed holder is replaced after this
ACTION_STATES: Final[dict[str, tuple[str, ...]]] = {
    "retry": ("FAILED", "STALLED"),
    "cancel": ("SCHEDULED",),
    "reschedule": ("SCHEDULED",),
}
RUNNING_STATES: Final = ("QUEUED", "RUNNING")  # cancel asks these to stop when include_running is set
_TEXT_FILTERS: Final = ("binding", "id", "unique_key", "concurrency_key")


@dataclass(frozen=True)
class BulkSpec:
    """A validated ``POST /api/bulk`` body."""

    action: str
    filter: JobFilter
    selection: JsonObject  # the filter as given, stored with the action and answered back
    dry_run: bool
    cap: int | None
    options: JsonObject  # includeRunning, and runAt/delayMs/priority for reschedule


def _filter(fields: JsonMapping, action: str, include_running: bool) -> tuple[JobFilter, JsonObject]:
    accepted = ACTION_STATES[action] + (RUNNING_STATES if action == "cancel" and include_running else ())
    texts: dict[str, str] = {}
    for name in (*_TEXT_FILTERS, "state"):
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            raise BodyError(f"filter.{name} must be a string")
        if value:
            texts[name] = well_formed(value)
    bounds: dict[str, float] = {}
    for name in ("created_from", "created_to"):
        value = fields.get(name)
        if value is not None:
            if not is_finite_number(value):
                raise BodyError(f"filter.{name} must be a number")
            bounds[name] = clamp_instant(value)
    state = texts.get("state")
    if state is not None and state not in accepted:
        raise BodyError(f"filter.state must be one of {', '.join(accepted)} for {action}")
    flt = JobFilter(
        states=(state,) if state is not None else accepted,
        binding=texts.get("binding"),
        id=texts.get("id"),
        unique_key=texts.get("unique_key"),
        concurrency_key=texts.get("concurrency_key"),
        created_from=bounds.get("created_from"),
        created_to=bounds.get("created_to"),
    )
    selection: JsonObject = {**texts, **bounds}  # in the order the fields are checked
    return flt, selection


def validate_bulk_action(body: JsonValue) -> BulkSpec:
    """``{action, filter, dryRun?, cap?, includeRunning?, runAt? | delayMs?, priority?}``."""
    if not isinstance(body, dict):
        raise BodyError("body must be an object")
    action = body.get("action")
    if not isinstance(action, str) or action not in ACTION_STATES:
        raise BodyError("action must be one of retry, cancel, reschedule")
    given = body.get("filter", {})
    if not isinstance(given, dict):
        raise BodyError("filter must be an object")
    include_running = body.get("includeRunning", False) is True
    flt, selection = _filter(given, action, include_running)
    cap = body.get("cap")
    if cap is not None and not (is_finite_number(cap) and cap >= 1):
        raise BodyError("cap must be a number of at least 1")
    options: JsonObject = {"includeRunning": include_running}
    if action == "reschedule":
        options.update(_reschedule_options(body))
    return BulkSpec(
        action,
        flt,
        selection,
        body.get("dryRun") is True,
        int(clamp_safe(cap)) if is_finite_number(cap) else None,
        options,
    )


def _reschedule_options(body: JsonMapping) -> JsonObject:
    if ("runAt" in body) == ("delayMs" in body):
        raise BodyError("reschedule takes one of runAt and delayMs")
    options: JsonObject = {}
    for name, clamp in (("runAt", clamp_instant), ("delayMs", clamp_duration), ("priority", clamp_safe)):
        if name in body:
            value = body[name]
            if not is_finite_number(value) or (name == "delayMs" and value < 0):
                raise BodyError(f"{name} must be a number" + (" of at least 0" if name == "delayMs" else ""))
            options[name] = clamp(value)
    return options


def _number(value: object) -> float | None:
    """A number this module stored in a record's options, or None."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def filter_of(record: BulkRecord) -> JobFilter:
    flt, _ = _filter(record.selection, record.action, bool(record.options.get("includeRunning")))
    return flt


async def step(store: BulkActions, shards: ShardNamespace, bulk_id: str, now_ms: int) -> bool:
    """Run the next batch if no one else is; True when the action has more to do."""
    if not await store.lease(bulk_id, now_ms, LEASE_MS):
        return False
    record = await store.get(bulk_id)
    if record is None:
        return False
    cap = _number(record.options.get("cap"))
    left = math.inf if cap is None else int(cap) - record.processed
    limit = int(min(BATCH_SIZE, left))
    after = None if record.cursor_id is None else (record.cursor_created_at or 0, record.cursor_id)
    page = await store.page(filter_of(record), record.snapshot_at, after, limit) if limit > 0 else []
    done, failed = await _apply(shards, record, [job_id for _, job_id in page], now_ms)
    finished = len(page) < limit or len(page) == left or limit <= 0
    await store.advance(record, done, failed, page[-1] if page else None, finished, now_ms)
    return not finished


async def _apply(
    shards: ShardNamespace, record: BulkRecord, job_ids: list[str], now_ms: int
) -> tuple[int, int]:
    """Each job through its shard, one call per shard; answers ``(accepted, refused)``."""
    groups: dict[str, list[str]] = {}
    refused = 0
    for job_id in job_ids:
        try:
            parsed = parse_job_id(job_id)
        except InvalidJobIdError:
            refused += 1
            continue
        groups.setdefault(f"{parsed.binding}#{parsed.shard}", []).append(job_id)
    if record.action == "reschedule":
        run_at, delay_ms = _number(record.options.get("runAt")), _number(record.options.get("delayMs"))
        priority = _number(record.options.get("priority"))
        run_after = int(run_at) if run_at is not None else now_ms + int(delay_ms or 0)
        answers = await asyncio.gather(
            *(
                shards.get(name).reschedule(job_id, run_at=run_after, priority=priority)
                for name, group in groups.items()
                for job_id in group
            )
        )
        ok = sum(1 for answer in answers if answer.get("ok"))
        return ok, refused + len(answers) - ok
    results = await asyncio.gather(
        *(shards.get(name).mutate_many(record.action, group) for name, group in groups.items())
    )
    counts = [counted(answer) for answer in results]
    return sum(ok for ok, _ in counts), refused + sum(failed for _, failed in counts)
