"""Body validation with the original's messages and order, first failure wins.

After the original's checks, ADR-0133's bounds: numbers clamped to what the stores hold, strings made
well-formed, a payload over the dispatch message limit refused with 413.
"""
#

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from tsumugi.api.shapes import CreateJobRequest, RescheduleRequest, StartRunRequest
from tsumugi.api.wire import BodyError, TooLargeError, is_finite_number
from tsumugi.core import jsonwire
from tsumugi.core.input_bounds import (
    check_payload_text,
    clamp_duration,
    clamp_instant,
    clamp_safe,
    well_formed,
)
from tsumugi.errors import PayloadTooLargeError

BULK_MAX_IDS: Final = 200
BULK_ACTION_STATES: Final[dict[str, tuple[str, ...]]] = {
    "retry": ("FAILED", "STALLED"),
    "cancel": ("SCHEDULED",),
}
_LOCAL_ID: Final = re.compile(r"[A-Za-z0-9_-]+")


def _require_object(body: Any, *, allow_array: bool) -> None:
    # A-38/A-49 [Q]: a JSON array is an object to the original's typeof check.
    if isinstance(body, dict) or (allow_array and isinstance(body, list)):
        return
    raise BodyError("body must be an object")


def _check_numbers(body: dict[str, Any], names: Sequence[str]) -> None:
    # A-38 step 5: present (null included) and not a finite number.
    for name in names:
        if name in body and not is_finite_number(body[name]):
            raise BodyError(f"{name} must be a number")


def _check_strings(body: dict[str, Any], names: Sequence[str]) -> None:
    for name in names:
        if name in body and not isinstance(body[name], str):
            raise BodyError(f"{name} must be a string")


def validate_create_job(body: Any, performers: Sequence[str] | None) -> CreateJobRequest:
    """returns the accepted fields; every other field is ignored."""
    #
    _require_object(body, allow_array=True)
    fields: dict[str, Any] = body if isinstance(body, dict) else {}
    binding = fields.get("binding")
    if not isinstance(binding, str) or binding == "":
        raise BodyError("binding is required")
    if performers and binding not in performers:
        raise BodyError(f"unknown binding: {binding}")
    if "payload" not in fields:
        raise BodyError("payload is required")
    _check_numbers(fields, ("maxAttempts", "delayMs", "priority"))
    if "maxAttempts" in fields and fields["maxAttempts"] < 1:
        raise BodyError("maxAttempts must be at least 1")
    if "delayMs" in fields and fields["delayMs"] < 0:
        raise BodyError("delayMs must not be negative")
    _check_strings(fields, ("concurrencyKey", "uniqueKey"))
    if "expiresInMs" in fields and not _is_positive_integer(fields["expiresInMs"]):
        raise BodyError("expiresInMs must be positive")  # J-41 [NEW]: the one newer field REST takes
    _check_keyed_fields(fields)
    _check_payload_size(fields["payload"])
    accepted: CreateJobRequest = {"binding": binding, "payload": fields["payload"]}
    for name in ("maxAttempts", "delayMs", "priority", "expiresInMs"):
        if name in fields:
            accepted[name] = fields[name]
    _accept_keyed_fields(fields, accepted)
    for name in ("concurrencyKey", "uniqueKey"):
        if fields.get(name):  # an empty key is dropped
            accepted[name] = fields[name]  # type: ignore[literal-required]
    return accepted


def _check_keyed_fields(fields: dict[str, Any]) -> None:
    """ADR-0149, ADR-0150: the debounce and throttle fields' types; the enqueue checks how they combine."""
    _check_strings(fields, ("debounceKey", "throttleKey"))
    _check_numbers(fields, ("debounceMs", "debounceMaxMs"))
    for name in ("debounceMs", "debounceMaxMs"):
        if name in fields and fields[name] <= 0:
            raise BodyError(f"{name} must be positive")
    if "throttle" in fields and not isinstance(fields["throttle"], dict):
        raise BodyError("throttle must be an object with tokens, intervalMs and onExcess")


def _accept_keyed_fields(fields: dict[str, Any], accepted: CreateJobRequest) -> None:
    for name in ("debounceMs", "debounceMaxMs", "throttle"):
        if name in fields:
            accepted[name] = fields[name]
    for name in ("debounceKey", "throttleKey"):
        if fields.get(name):  # an empty key is dropped, as for uniqueKey
            accepted[name] = fields[name]  # type: ignore[literal-required]


def _check_payload_size(payload: Any) -> None:
    """ADR-0133: 413 when the payload's JSON is over the limit (any parsed JSON value serialises)."""
    try:
        check_payload_text(jsonwire.dumps(payload))
    except PayloadTooLargeError as error:
        raise TooLargeError(str(error)) from None


def validate_reschedule(body: Any) -> RescheduleRequest:
    """exactly one of runAt/delayMs; runAt may lie in the past."""
    #
    _require_object(body, allow_array=True)
    fields: dict[str, Any] = body if isinstance(body, dict) else {}
    _check_numbers(fields, ("runAt", "delayMs", "priority"))
    if "runAt" in fields and "delayMs" in fields:
        raise BodyError("runAt and delayMs are mutually exclusive")
    if "runAt" not in fields and "delayMs" not in fields:
        raise BodyError("runAt or delayMs is required")
    if "delayMs" in fields and fields["delayMs"] < 0:
        raise BodyError("delayMs must not be negative")
    accepted: RescheduleRequest = {}
    if "runAt" in fields:
        accepted["runAt"] = clamp_instant(fields["runAt"])
    if "delayMs" in fields:
        accepted["delayMs"] = clamp_duration(fields["delayMs"])
    if "priority" in fields:
        accepted["priority"] = clamp_safe(fields["priority"])  # ADR-0133
    return accepted


@dataclass(frozen=True)
class BulkSelection:
    """Either explicit ids, or a read-model filter with a limit."""

    #

    ids: tuple[str, ...] | None
    states: tuple[str, ...] = ()
    binding: str | None = None
    unique_key: str | None = None
    concurrency_key: str | None = None
    created_from: float | None = None
    created_to: float | None = None
    limit: int = BULK_MAX_IDS


def _ids_mode(ids: Any) -> BulkSelection:
    if not isinstance(ids, list):
        raise BodyError("ids must be an array")
    if not ids:
        raise BodyError("ids must not be empty")
    if len(ids) > BULK_MAX_IDS:
        raise BodyError(f"ids must not exceed {BULK_MAX_IDS} entries")
    if not all(isinstance(i, str) and i for i in ids):
        raise BodyError("ids must be non-empty strings")
    return BulkSelection(ids=tuple(ids))


def validate_bulk(body: Any, action: str) -> BulkSelection:
    """ids mode when ``ids`` is present (null included), else filter mode."""
    #
    _require_object(body, allow_array=True)
    fields: dict[str, Any] = body if isinstance(body, dict) else {}
    if "ids" in fields:
        return _ids_mode(fields["ids"])
    accepted = BULK_ACTION_STATES[action]
    _check_strings(fields, ("binding", "state", "unique_key", "concurrency_key"))
    if "state" in fields and fields["state"] not in accepted:
        raise BodyError(f"state must be one of {', '.join(accepted)} for {action}")
    _check_numbers(fields, ("created_from", "created_to", "limit"))
    if "limit" in fields and fields["limit"] < 1:
        raise BodyError("limit must be at least 1")
    limit = min(BULK_MAX_IDS, math.floor(fields.get("limit", BULK_MAX_IDS)))
    return BulkSelection(
        ids=None,
        states=(fields["state"],) if "state" in fields else accepted,
        binding=_filter_text(fields.get("binding")),
        unique_key=_filter_text(fields.get("unique_key")),
        concurrency_key=_filter_text(fields.get("concurrency_key")),
        created_from=_bound(fields.get("created_from")),
        created_to=_bound(fields.get("created_to")),
        limit=limit,
    )


def _filter_text(value: str | None) -> str | None:
    """empty is absent; ADR-0133: compared as the stores hold strings."""
    #
    return well_formed(value) if value else None


def _bound(value: float | None) -> float | None:
    """A created_at bound beyond every instant selects what that instant would (ADR-0133)."""
    return None if value is None else clamp_instant(value)


def _is_positive_integer(value: Any) -> bool:
    return is_finite_number(value) and float(value).is_integer() and value > 0


def validate_start_run(body: Any, flows: Sequence[str]) -> StartRunRequest:
    """A run's start body; an id outside ``[A-Za-z0-9_-]`` is 400 ``invalid run id``."""
    _require_object(body, allow_array=True)
    fields: dict[str, Any] = body if isinstance(body, dict) else {}
    flow = fields.get("flow")
    if not isinstance(flow, str) or flow == "":
        raise BodyError("flow is required")
    if flows and flow not in flows:
        raise BodyError(f"unknown flow: {flow}")
    if "input" not in fields:
        raise BodyError("input is required")
    if "id" in fields and not isinstance(fields["id"], str):
        raise BodyError("id must be a string")
    if "deadlineMs" in fields and not _is_positive_integer(fields["deadlineMs"]):
        raise BodyError("deadlineMs must be a positive integer")
    local_id = fields.get("id") or None
    if local_id is not None and not _LOCAL_ID.fullmatch(local_id):
        raise BodyError("invalid run id")
    deadline = fields.get("deadlineMs")
    return {
        "flow": flow,
        "input": fields["input"],
        "id": local_id,
        "deadlineMs": None if deadline is None else int(clamp_duration(deadline)),  # ADR-0133
    }
