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
from typing import Final, TypeGuard

from tsumugi.api.shapes import CreateJobRequest, RescheduleRequest, StartRunRequest
from tsumugi.api.wire import BodyError, TooLargeError, is_finite_number
from tsumugi.core import wire_format
from tsumugi.core.input_bounds import clamp_duration, clamp_instant, clamp_safe, well_formed
from tsumugi.core.json_types import JsonMapping, JsonValue
from tsumugi.core.wire_format import check_payload_text
from tsumugi.errors import PayloadTooLargeError

BULK_MAX_IDS: Final = 200
BULK_ACTION_STATES: Final[dict[str, tuple[str, ...]]] = {
    "retry": ("FAILED", "STALLED"),
    "cancel": ("SCHEDULED",),
}
_LOCAL_ID: Final = re.compile(r"[A-Za-z0-9_-]+")


def _require_object(body: JsonValue, *, allow_array: bool) -> JsonMapping:
    """The body's fields: a JSON array is an object without fields to the original's typeof check."""
    # A-38/A-49 [Q]
    if isinstance(body, dict):
        return body
    if allow_array and isinstance(body, list):
        return {}
    raise BodyError("body must be an object")


def _numbers(fields: JsonMapping, names: Sequence[str]) -> dict[str, float]:
    """The given fields of ``names``, each a finite number (as given: an int stays an int)."""
    # A-38 step 5: present (null included) and not a finite number.
    found: dict[str, float] = {}
    for name in names:
        if name in fields:
            value = fields[name]
            if not is_finite_number(value):
                raise BodyError(f"{name} must be a number")
            found[name] = value
    return found


def _strings(fields: JsonMapping, names: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in names:
        if name in fields:
            value = fields[name]
            if not isinstance(value, str):
                raise BodyError(f"{name} must be a string")
            found[name] = value
    return found


def validate_create_job(body: JsonValue, performers: Sequence[str] | None) -> CreateJobRequest:
    """returns the accepted fields; every other field is ignored."""
    #
    fields = _require_object(body, allow_array=True)
    binding = fields.get("binding")
    if not isinstance(binding, str) or binding == "":
        raise BodyError("binding is required")
    if performers and binding not in performers:
        raise BodyError(f"unknown binding: {binding}")
    if "payload" not in fields:
        raise BodyError("payload is required")
    numbers = _numbers(fields, ("maxAttempts", "delayMs", "priority"))
    if "maxAttempts" in numbers and numbers["maxAttempts"] < 1:
        raise BodyError("maxAttempts must be at least 1")
    if "delayMs" in numbers and numbers["delayMs"] < 0:
        raise BodyError("delayMs must not be negative")
    keys = _strings(fields, ("concurrencyKey", "uniqueKey"))
    expires = fields.get("expiresInMs")
    if "expiresInMs" in fields and not _is_positive_integer(expires):
        raise BodyError("expiresInMs must be positive")  # J-41 [NEW]: the one newer field REST takes
    _check_keyed_fields(fields)
    _check_payload_size(fields["payload"])
    accepted: CreateJobRequest = {"binding": binding, "payload": fields["payload"]}
    _accept_options(numbers, expires, accepted)
    _accept_keyed_fields(fields, accepted)
    # an empty key is dropped
    if keys.get("concurrencyKey"):
        accepted["concurrencyKey"] = keys["concurrencyKey"]
    if keys.get("uniqueKey"):
        accepted["uniqueKey"] = keys["uniqueKey"]
    return accepted


def _accept_options(numbers: dict[str, float], expires: JsonValue, accepted: CreateJobRequest) -> None:
    if "maxAttempts" in numbers:
        accepted["maxAttempts"] = numbers["maxAttempts"]
    if "delayMs" in numbers:
        accepted["delayMs"] = numbers["delayMs"]
    if "priority" in numbers:
        accepted["priority"] = numbers["priority"]
    if _is_positive_integer(expires):  # checked when given: kept as given
        accepted["expiresInMs"] = expires


def _check_keyed_fields(fields: JsonMapping) -> None:
    """ADR-0149, ADR-0150: the debounce and throttle fields' types; the enqueue checks how they combine."""
    _strings(fields, ("debounceKey", "throttleKey"))
    for name, value in _numbers(fields, ("debounceMs", "debounceMaxMs")).items():
        if value <= 0:
            raise BodyError(f"{name} must be positive")
    if "throttle" in fields and not isinstance(fields["throttle"], dict):
        raise BodyError("throttle must be an object with tokens, intervalMs and onExcess")


def _accept_keyed_fields(fields: JsonMapping, accepted: CreateJobRequest) -> None:
    """What ``_check_keyed_fields`` let through; an empty key is dropped, as for uniqueKey."""
    #
    debounce, debounce_max = fields.get("debounceMs"), fields.get("debounceMaxMs")
    throttle = fields.get("throttle")
    debounce_key, throttle_key = fields.get("debounceKey"), fields.get("throttleKey")
    if is_finite_number(debounce):
        accepted["debounceMs"] = debounce
    if is_finite_number(debounce_max):
        accepted["debounceMaxMs"] = debounce_max
    if isinstance(throttle, dict):
        accepted["throttle"] = throttle
    if isinstance(debounce_key, str) and debounce_key:
        accepted["debounceKey"] = debounce_key
    if isinstance(throttle_key, str) and throttle_key:
        accepted["throttleKey"] = throttle_key


def _check_payload_size(payload: JsonValue) -> None:
    """ADR-0133: 413 when the payload's JSON is over the limit (any parsed JSON value serialises)."""
    try:
        check_payload_text(wire_format.dumps(payload))
    except PayloadTooLargeError as error:
        raise TooLargeError(str(error)) from None


def validate_reschedule(body: JsonValue) -> RescheduleRequest:
    """exactly one of runAt/delayMs; runAt may lie in the past."""
    #
    fields = _require_object(body, allow_array=True)
    numbers = _numbers(fields, ("runAt", "delayMs", "priority"))
    if "runAt" in fields and "delayMs" in fields:
        raise BodyError("runAt and delayMs are mutually exclusive")
    if "runAt" not in fields and "delayMs" not in fields:
        raise BodyError("runAt or delayMs is required")
    if "delayMs" in numbers and numbers["delayMs"] < 0:
        raise BodyError("delayMs must not be negative")
    accepted: RescheduleRequest = {}
    if "runAt" in numbers:
        accepted["runAt"] = clamp_instant(numbers["runAt"])
    if "delayMs" in numbers:
        accepted["delayMs"] = clamp_duration(numbers["delayMs"])
    if "priority" in numbers:
        accepted["priority"] = clamp_safe(numbers["priority"])  # ADR-0133
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


def _ids_mode(ids: JsonValue) -> BulkSelection:
    if not isinstance(ids, list):
        raise BodyError("ids must be an array")
    if not ids:
        raise BodyError("ids must not be empty")
    if len(ids) > BULK_MAX_IDS:
        raise BodyError(f"ids must not exceed {BULK_MAX_IDS} entries")
    given = tuple(i for i in ids if isinstance(i, str) and i)
    if len(given) != len(ids):
        raise BodyError("ids must be non-empty strings")
    return BulkSelection(ids=given)


def validate_bulk(body: JsonValue, action: str) -> BulkSelection:
    """ids mode when ``ids`` is present (null included), else filter mode."""
    #
    fields = _require_object(body, allow_array=True)
    if "ids" in fields:
        return _ids_mode(fields["ids"])
    accepted = BULK_ACTION_STATES[action]
    texts = _strings(fields, ("binding", "state", "unique_key", "concurrency_key"))
    if "state" in texts and texts["state"] not in accepted:
        raise BodyError(f"state must be one of {', '.join(accepted)} for {action}")
    numbers = _numbers(fields, ("created_from", "created_to", "limit"))
    if "limit" in numbers and numbers["limit"] < 1:
        raise BodyError("limit must be at least 1")
    limit = min(BULK_MAX_IDS, math.floor(numbers.get("limit", BULK_MAX_IDS)))
    return BulkSelection(
        ids=None,
        states=(texts["state"],) if "state" in texts else accepted,
        binding=_filter_text(texts.get("binding")),
        unique_key=_filter_text(texts.get("unique_key")),
        concurrency_key=_filter_text(texts.get("concurrency_key")),
        created_from=_bound(numbers.get("created_from")),
        created_to=_bound(numbers.get("created_to")),
        limit=limit,
    )


def _filter_text(value: str | None) -> str | None:
    """empty is absent; ADR-0133: compared as the stores hold strings."""
    #
    return well_formed(value) if value else None


def _bound(value: float | None) -> float | None:
    """A created_at bound beyond every instant selects what that instant would (ADR-0133)."""
    return None if value is None else clamp_instant(value)


def _is_positive_integer(value: object) -> TypeGuard[int | float]:
    return is_finite_number(value) and float(value).is_integer() and value > 0


def validate_start_run(body: JsonValue, flows: Sequence[str]) -> StartRunRequest:
    """A run's start body; an id outside ``[A-Za-z0-9_-]`` is 400 ``invalid run id``."""
    fields = _require_object(body, allow_array=True)
    flow = fields.get("flow")
    if not isinstance(flow, str) or flow == "":
        raise BodyError("flow is required")
    if flows and flow not in flows:
        raise BodyError(f"unknown flow: {flow}")
    if "input" not in fields:
        raise BodyError("input is required")
    given_id = fields.get("id")
    if "id" in fields and not isinstance(given_id, str):
        raise BodyError("id must be a string")
    deadline = fields.get("deadlineMs")
    if "deadlineMs" in fields and not _is_positive_integer(deadline):
        raise BodyError("deadlineMs must be a positive integer")
    local_id = given_id if isinstance(given_id, str) and given_id else None
    if local_id is not None and not _LOCAL_ID.fullmatch(local_id):
        raise BodyError("invalid run id")
    return {
        "flow": flow,
        "input": fields["input"],
        "id": local_id,
        "deadlineMs": int(clamp_duration(deadline)) if _is_positive_integer(deadline) else None,  # ADR-0133
    }
