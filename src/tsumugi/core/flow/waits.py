"""Sleep and wait-for-event nodes as data and decisions (ADR-0147, ADR-0148).

A waiting node runs no job. It starts like any node once its dependencies allow it, then holds only a
``wake_at`` instant in the run's storage: when a sleep ends, or when a wait for an event gives up. The
run's one alarm sits at the earliest of those instants and the run's deadline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from tsumugi.core.flow.model import Mapper, call_mapper
from tsumugi.core.input_bounds import MAX_DURATION_MS, MAX_INSTANT_MS
from tsumugi.errors import InvalidFlowError

# An event name travels in a URL path segment, so it has no slash; dots allow names like "order.approved".
_EVENT_RE: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class WaitKind(StrEnum):
    """What a waiting node waits for; the value is stored on the node row and sent over REST."""

    SLEEP = "sleep"
    EVENT = "event"


class OnTimeout(StrEnum):
    """What a wait for an event becomes when its ``timeout_ms`` passes first."""

    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class WaitSpec:
    """The waiting part of a sleep or wait-for-event node."""

    kind: WaitKind
    ms: int | None = None  # sleep: how long, from the moment the node starts
    until: Mapper | None = None  # sleep: ``until(flow_input, deps) -> epoch ms``
    event: str | None = None  # event: the name it waits for
    timeout_ms: int | None = None  # event: how long to wait; None waits for as long as the run lives
    on_timeout: OnTimeout = OnTimeout.FAIL


@dataclass(frozen=True, slots=True)
class WaitOutcome:
    """How a waiting node settles when its ``wake_at`` comes."""

    state: str
    error: str | None = None


def timeout_error(event: str) -> str:
    return f"event did not arrive in time: {event}"


def validate_event_name(node_id: str, event: object) -> str:
    if not isinstance(event, str) or _EVENT_RE.fullmatch(event) is None:
        raise InvalidFlowError(
            f"event must be 1 to 128 letters, digits, dots, hyphens or underscores: {node_id}"
        )
    return event


def is_event_name(text: str) -> bool:
    return _EVENT_RE.fullmatch(text) is not None


def _milliseconds(node_id: str, name: str, value: object, *, minimum: int) -> int:
    """A whole number of milliseconds; integral floats pass as in JS, bools never."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive" if minimum > 0 else "a non-negative"
        raise InvalidFlowError(f"{name} must be {kind} integer of milliseconds: {node_id}")
    return min(value, MAX_DURATION_MS)  # ADR-0133: now plus the duration stays an instant


def sleep_spec(node_id: str, ms: object, until: object) -> WaitSpec:
    """Exactly one of ``ms`` and ``until``; ``until`` is a function like ``input``."""
    if (ms is None) == (until is None):
        raise InvalidFlowError(f"sleep takes exactly one of ms and until: {node_id}")
    if until is not None:
        if not callable(until):
            raise InvalidFlowError(f"until must be a function: {node_id}")
        return WaitSpec(WaitKind.SLEEP, until=until)
    return WaitSpec(WaitKind.SLEEP, ms=_milliseconds(node_id, "ms", ms, minimum=0))


def event_spec(node_id: str, event: object, timeout_ms: object, on_timeout: object) -> WaitSpec:
    name = validate_event_name(node_id, event)
    timeout = None if timeout_ms is None else _milliseconds(node_id, "timeout_ms", timeout_ms, minimum=1)
    try:
        action = OnTimeout(str(on_timeout))
    except ValueError:
        raise InvalidFlowError(f"on_timeout must be 'fail' or 'skip': {node_id}") from None
    return WaitSpec(WaitKind.EVENT, event=name, timeout_ms=timeout, on_timeout=action)


def wake_at_of(
    node_id: str, wait: WaitSpec, flow_input: object, deps: Mapping[str, object], now_ms: int
) -> int | None:
    """When the node stops waiting, decided as it starts; None for an event wait without a timeout.

    Raises for an ``until`` that does not return an epoch-ms number (the node then fails).
    """
    if wait.kind is WaitKind.EVENT:
        return None if wait.timeout_ms is None else now_ms + wait.timeout_ms
    if wait.until is None:
        return now_ms + (wait.ms or 0)
    value = call_mapper(wait.until, flow_input, deps)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidFlowError(f"until must return an epoch-ms number: {node_id}")
    return int(min(max(value, 0), MAX_INSTANT_MS))


def due_outcome(kind: str, event: str | None, on_timeout: str | None) -> WaitOutcome:
    """A sleep completes; a wait for an event fails, or is skipped, as its ``on_timeout`` says."""
    if kind == WaitKind.SLEEP:
        return WaitOutcome("COMPLETED")
    error = timeout_error(event or "")
    return WaitOutcome("SKIPPED" if on_timeout == OnTimeout.SKIP else "FAILED", error)


def is_due(wake_at: int | None, now_ms: int) -> bool:
    return wake_at is not None and wake_at <= now_ms
