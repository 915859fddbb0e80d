"""Reading one enqueue input (the camelCase wire dict a client, a run or a notice sends) field by field,
and the row of a new job that sets options.

Inputs were checked where they were made (``core.options``, the REST schemas, a flow's node options); these
narrow each field to the type the row stores, converting numbers as ``int()`` always did.
"""
# J-28

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, TypeAlias

from tsumugi.core import wire_format
from tsumugi.core.backoff import DEFAULT_BACKOFF
from tsumugi.core.defaults import (  # ADR-0157: said once
    DEFAULT_GUARANTEE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_TIMEOUT_MS,
)
from tsumugi.errors import EnqueueError
from tsumugi.storage.job_rows import JobRow

EnqueueItem: TypeAlias = Mapping[str, object]
DEFAULT_BACKOFF_TEXT: Final = wire_format.dumps(DEFAULT_BACKOFF)  # encoded once, not per job (ADR-0105)
# An input with only these keys leaves every option at its default (ADR-0120).
PLAIN_KEYS: Final = frozenset({"binding", "payload"})
# A run's node job carries its payload as the JSON text the run stored at expansion, instead of
# ``payload``: the shard stores it as it is (ADR-0179). Only coordinators send it; clients cannot.
PAYLOAD_TEXT_KEY: Final = "payloadJson"


def number(value: object, key: str) -> int | float:
    """A numeric field; a numeric string converts as ``int()`` would."""
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return int(value)
    raise EnqueueError(f"{key} must be a number, got {value!r}")


def opt_int(item: EnqueueItem, key: str, default: int) -> int:
    """``int`` of the field; missing and explicit None both mean the default."""
    value = item.get(key)
    return default if value is None else int(number(value, key))


def required_int(item: EnqueueItem, key: str) -> int:
    """``int`` of a field its option requires (``debounceMs`` with ``debounceKey``)."""
    return int(number(item[key], key))


def maybe_int(item: EnqueueItem, key: str) -> int | None:
    value = item.get(key)
    return None if value is None else int(number(value, key))


def opt_number(item: EnqueueItem, key: str, default: float) -> float:
    """The field as given (an int stays an int); missing and None mean the default."""
    value = item.get(key)
    return default if value is None else number(value, key)


def text(item: EnqueueItem, key: str) -> str | None:
    """A string field, or None when missing."""
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    raise EnqueueError(f"{key} must be a string, got {value!r}")


def mapping(item: EnqueueItem, key: str) -> Mapping[str, object]:
    """An object field (``throttle``)."""
    value = item.get(key)
    if isinstance(value, Mapping):
        return value
    raise EnqueueError(f"{key} must be an object, got {value!r}")


def payload_text(item: EnqueueItem) -> str:
    """The stored payload JSON of an input: its ``payloadJson`` as given, else its ``payload`` encoded;
    either way within the payload limit (ADR-0133)."""
    given = item.get(PAYLOAD_TEXT_KEY)
    if given is None:
        stored = _payload_text(item.get("payload"))
    elif isinstance(given, str):
        stored = given
    else:
        raise EnqueueError(f"{PAYLOAD_TEXT_KEY} must be a string, got {given!r}")
    wire_format.check_payload_text(stored)
    return stored


def _payload_text(payload: object) -> str:
    """The stored payload JSON; an unserializable payload fails the enqueue."""
    # J-27
    try:
        return wire_format.dumps(payload)
    except (TypeError, ValueError, RecursionError) as exc:  # the client's words (core/options)
        raise EnqueueError(f"payload must be JSON-serializable: {exc}") from None


def _backoff_text(backoff: object) -> str:
    return DEFAULT_BACKOFF_TEXT if backoff is None else wire_format.dumps(backoff)  # J-28: None -> default


def new_job_row(job_id: str, item: EnqueueItem, now_ms: int, template: JobRow) -> JobRow:
    """The row of a new SCHEDULED job: ``template`` (``job_template``) with the item's options."""
    # J-30
    row = template.copy()
    row["id"] = job_id
    row["payload"] = payload_text(item)
    if item.keys() <= PLAIN_KEYS:
        return row  # nothing but binding and payload: every option is the default (ADR-0120)
    run_at = maybe_int(item, "runAt")
    delay_ms = maybe_int(item, "delayMs")
    if run_at is not None or delay_ms is not None:
        row["run_after"] = run_at if run_at is not None else now_ms + (delay_ms or 0)  # J-26
    expires_at = maybe_int(item, "expiresAt")
    if expires_at is None:
        expires_in_ms = maybe_int(item, "expiresInMs")
        expires_at = None if expires_in_ms is None else now_ms + expires_in_ms  # J-41: from enqueue time
    row["expires_at"] = expires_at
    row["priority"] = opt_number(item, "priority", DEFAULT_PRIORITY)
    row["max_attempts"] = opt_int(item, "maxAttempts", DEFAULT_MAX_ATTEMPTS)
    guarantee = text(item, "guarantee")
    row["guarantee"] = DEFAULT_GUARANTEE if guarantee is None else guarantee
    row["timeout_ms"] = opt_int(item, "timeoutMs", DEFAULT_TIMEOUT_MS)
    row["backoff"] = _backoff_text(item.get("backoff"))
    row["concurrency_key"] = text(item, "concurrencyKey")
    row["unique_key"] = text(item, "uniqueKey")
    row["run_id"] = text(item, "runId")
    row["node_id"] = text(item, "nodeId")
    row["traceparent"] = text(item, "traceparent")
    return row
