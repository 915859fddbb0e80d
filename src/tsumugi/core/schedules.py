"""Schedule definitions and their occurrence arithmetic."""
# S-1..S-5, S-10, S-11

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, overload

from tsumugi.core import wire_format
from tsumugi.core.config import backoff_from
from tsumugi.core.cron import CronSpec, next_cron_at, parse_cron
from tsumugi.core.json_types import JsonObject
from tsumugi.core.options import to_wire_input
from tsumugi.errors import EnqueueError, InvalidCronError, InvalidScheduleError

_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")  # S-2.1: names become part of job and run ids
MIN_EVERY_MS: Final = 1000  # S-2.5: the scheduler's alarm granularity
CRON_PROBE_FROM_MS: Final = 1_704_067_200_000  # S-2.6: 2024-01-01T00:00Z
JOB_OPTIONS: Final = ("max_attempts", "backoff", "timeout_ms", "priority", "guarantee", "concurrency_key")
_FORBIDDEN: Final = ("unique_key", "delay_ms", "run_at")  # S-3
KNOWN_KEYS: Final = (
    "binding",
    "flow",
    "payload",
    "input",
    "every_ms",
    "cron",
    "overlap",
    "partition_key",
    "deadline_ms",
    *JOB_OPTIONS,
)


@dataclass(frozen=True, slots=True)
class ScheduleContext:
    """What a schedule's payload or input function receives."""

    # S-4

    scheduled_at: int  # the occurrence being fired, epoch ms (not the wall-clock firing time)


@dataclass(frozen=True, slots=True)
class ScheduleDef:
    """One normalized schedule; ``definition`` is the code's dict (payload/input, job options)."""

    name: str
    kind: str  # "job" | "flow"
    target: str
    every_ms: int | None
    cron: str | None
    overlap: str
    # The code's definition, checked by normalize_schedules; Any because the scheduler reads its fields by
    # name in a loop (partition_key as str | None, the job options as stored), which a TypedDict cannot key.
    definition: Mapping[str, Any]

    def fingerprint_entry(self) -> JsonObject:
        """what the fingerprint covers (not payloads, inputs or job options)."""
        # S-5
        return {
            "name": self.name,
            "kind": self.kind,
            "target": self.target,
            "every_ms": self.every_ms,
            "cron": self.cron,
            "overlap": self.overlap,
        }


def _integral(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def _timing(name: str, spec: Mapping[str, object]) -> tuple[int | None, str | None]:
    """The timing: exactly one of ``every_ms`` and ``cron``, and that one valid."""
    has_every, has_cron = spec.get("every_ms") is not None, spec.get("cron") is not None
    if has_every == has_cron:
        raise InvalidScheduleError(f"exactly one of every_ms and cron is required: {name}")
    if has_every:
        every = _integral(spec["every_ms"])
        if every is None or every < MIN_EVERY_MS:
            raise InvalidScheduleError(f"every_ms must be an integer of at least 1000: {name}")
        return every, None
    try:
        parsed = parse_cron(spec["cron"])
        next_cron_at(parsed, CRON_PROBE_FROM_MS)
    except InvalidCronError as exc:
        raise InvalidScheduleError(f"invalid cron in schedule {name}: {exc}") from exc
    return None, parsed.expr


def _target(
    name: str,
    spec: Mapping[str, object],
    shards_of: Mapping[str, int],
    requires_of: Mapping[str, Collection[str]],
    flow_names: Collection[str],
) -> tuple[str, str]:
    """The target: a registered binding with its payload and job options, or a flow with its input."""
    if (spec.get("binding") is None) == (spec.get("flow") is None):
        raise InvalidScheduleError(f"exactly one of binding and flow is required: {name}")
    if spec.get("flow") is not None:
        flow = str(spec["flow"])
        if flow not in flow_names:
            raise InvalidScheduleError(f"flow is not registered: {name} -> {flow}")
        if "input" not in spec:
            raise InvalidScheduleError(f"input is required: {name}")
        deadline = spec.get("deadline_ms")
        whole = _integral(deadline)
        if deadline is not None and (whole is None or whole <= 0):
            # S-1: caught now, not as a last_error at every firing (F-11's rule for deadlines)
            raise InvalidScheduleError(f"deadline_ms must be a positive integer: {name}")
        return "flow", flow
    binding = str(spec["binding"])
    if binding not in shards_of:
        raise InvalidScheduleError(f"binding is not registered: {name} -> {binding}")
    if "payload" not in spec:
        raise InvalidScheduleError(f"payload is required: {name}")
    if shards_of[binding] > 1 and spec.get("partition_key") is None:
        raise InvalidScheduleError(f"partition_key is required for a sharded binding: {name} -> {binding}")
    requires = requires_of.get(binding, ())
    if "unique_key" in requires:
        raise InvalidScheduleError(f"{binding} requires unique_key, which schedules cannot set: {name}")
    if "concurrency_key" in requires and spec.get("concurrency_key") is None:
        raise InvalidScheduleError(f"concurrency_key is required by {binding}: {name}")
    _check_job_options(name, spec)
    return "job", binding


def _with_backoff(spec: Mapping[str, object]) -> Mapping[str, object]:
    """The definition with a backoff mapping read once, so it is enqueued in its stored form."""
    # J-101
    backoff = spec.get("backoff")
    if not isinstance(backoff, Mapping):
        return spec
    return {**spec, "backoff": backoff_from(backoff)}  # valid: _check_job_options ran first


def _check_keys(name: str, spec: Mapping[str, object]) -> None:
    """A misspelt key is named, with the key it was probably meant to be, instead of being ignored."""
    for key in spec:
        if key in KNOWN_KEYS:
            continue
        close = difflib.get_close_matches(str(key), KNOWN_KEYS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidScheduleError(
            f"unknown key {key!r} in schedule {name}{hint}; a schedule takes {', '.join(KNOWN_KEYS)}"
        )


def _check_job_options(name: str, spec: Mapping[str, object]) -> None:
    """the job options obey the enqueue rules now, not at every firing."""
    # J-29, S-1, S-3
    given = {k: spec[k] for k in (*JOB_OPTIONS, "partition_key") if spec.get(k) is not None}
    try:
        to_wire_input({"binding": "schedule", "payload": None, **given})
    except EnqueueError as error:
        raise InvalidScheduleError(f"invalid job option in schedule {name}: {error}") from None


def normalize_schedules(
    schedules: Mapping[str, Mapping[str, object]],
    *,
    shards_of: Mapping[str, int],
    requires_of: Mapping[str, Collection[str]],
    flow_names: Collection[str],
) -> list[ScheduleDef]:
    """Validate every definition in the original's check order and return them sorted by name."""
    normalized: list[ScheduleDef] = []
    for name, spec in schedules.items():
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise InvalidScheduleError(
                f"invalid schedule name: {wire_format.quote(str(name))} "
                "(alphanumeric, hyphen and underscore, up to 64 chars)"
            )
        for key in _FORBIDDEN:
            if key in spec:
                raise InvalidScheduleError(f"{key} is not allowed in a schedule: {name}")
        overlap = spec.get("overlap", "skip")
        if not isinstance(overlap, str) or overlap not in ("skip", "overlap"):
            raise InvalidScheduleError(f"overlap must be 'skip' or 'overlap': {name}")
        _check_keys(name, spec)  # ADR-0146: after S-2 step 3, so every message of the original comes first
        every_ms, cron = _timing(name, spec)
        kind, target = _target(name, spec, shards_of, requires_of, flow_names)
        definition = _with_backoff(spec) if kind == "job" else spec
        normalized.append(ScheduleDef(name, kind, target, every_ms, cron, overlap, definition))
    return sorted(normalized, key=lambda d: d.name)


def fingerprint(defs: Collection[ScheduleDef]) -> str:
    """The compact JSON of the normalized list, independent of declaration order."""
    # S-5
    return wire_format.dumps([d.fingerprint_entry() for d in sorted(defs, key=lambda d: d.name)])


Timing = ScheduleDef | Mapping[str, object]  # what the spec's next_occurrence(timing, previous, now) reads


def _timing_of(timing: Timing) -> tuple[int | None, CronSpec | None]:
    cron: object  # parse_cron names what is wrong with one that is not text
    if isinstance(timing, ScheduleDef):
        every_ms, cron = timing.every_ms, timing.cron
    else:
        every_ms, cron = _integral(timing.get("every_ms")), timing.get("cron")
    return every_ms, parse_cron(cron) if cron is not None else None


_CALL_FORMS: Final = "next_occurrence takes (timing, previous, now_ms) or (every_ms, cron, previous, now_ms)"


@overload
def next_occurrence(timing: Timing, previous: int | None, now_ms: int, /) -> int: ...


@overload
def next_occurrence(
    every_ms: int | None, cron: CronSpec | None, previous: int | None, now_ms: int, /
) -> int: ...


def next_occurrence(
    first: Timing | int | None,
    second: CronSpec | int | None,
    third: int | None,
    fourth: int | None = None,
    /,
) -> int:
    """The next occurrence strictly after ``now_ms``, keeping the phase of ``previous``.

    Called as ``(every_ms, cron_spec, previous, now_ms)`` or, as the spec writes it, ``(timing,
    previous, now_ms)`` with a ScheduleDef or a ``{every_ms, cron}`` mapping (cron as text).
    """
    # S-10, S-11
    if fourth is None:  # (timing, previous, now_ms)
        if isinstance(first, int) or first is None or isinstance(second, CronSpec) or third is None:
            raise TypeError(_CALL_FORMS)
        every_ms, cron = _timing_of(first)
        previous, now_ms = second, third
    else:  # (every_ms, cron, previous, now_ms)
        if not (first is None or isinstance(first, int)) or isinstance(second, int):
            raise TypeError(_CALL_FORMS)
        every_ms, cron, previous, now_ms = first, second, third, fourth
    if every_ms is not None:
        if previous is None:
            return now_ms + every_ms
        missed = (max(now_ms, previous) - previous) // every_ms
        return previous + every_ms * (missed + 1)
    assert cron is not None
    return next_cron_at(cron, max(now_ms, previous if previous is not None else now_ms))
