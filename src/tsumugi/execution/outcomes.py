"""Report payloads the consumer sends to the shard."""
# J-119, J-73, J-76

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from typing import Final

from tsumugi.core.config_checks import camel_case
from tsumugi.core.json_types import JsonValue
from tsumugi.errors import (
    InvalidPayloadError,
    PermanentFailure,
    ResultNotJsonError,
    RetryAfter,
    TsumugiTimeoutError,
)
from tsumugi.execution.messages import FailureReport, SpawnWire, SuccessReport
from tsumugi.performer import SpawnRequest

__all__ = ["error_text", "failure", "not_found", "success"]

_NOT_FOUND: Final = "performer not found: {} (export it, or add a service binding)"  # J-61
# Raised by the consumer around perform, not inside it: the message says it all, a stack would not help.
_WITHOUT_STACK: Final = (TsumugiTimeoutError, InvalidPayloadError, ResultNotJsonError)


def error_text(error: BaseException) -> str:
    """The attempt's error text: the Python traceback; the shard truncates it."""
    # J-73 [PORT]
    if isinstance(error, _WITHOUT_STACK):
        return f"{type(error).__name__}: {error}"
    try:
        return "".join(traceback.format_exception(error))
    except Exception:
        return f"{type(error).__name__}: {error}"


def success(
    result: JsonValue,
    spawns: Sequence[SpawnRequest],
    attempt: int | None,
    spawn_defaults: Mapping[str, Mapping[str, object]] | None = None,
) -> SuccessReport:
    """``{ok: true, result, spawns?, attempt}``; spawns only when non-empty.

    A spawn's options are laid over its binding's class defaults (``spawn_defaults``, ADR-0141).
    """
    # J-119
    outcome: SuccessReport = {"ok": True, "result": result}
    if spawns:
        defaults = spawn_defaults or {}
        outcome["spawns"] = [_spawn_wire(spawn, defaults.get(spawn.binding)) for spawn in spawns]
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def failure(error: BaseException, attempt: int | None, now_ms: int) -> FailureReport:
    """``{ok: false, error, retry?, attempt}``; a performer's retry signal becomes data."""
    # J-76
    outcome: FailureReport = {"ok": False, "error": error_text(error)}
    if isinstance(error, PermanentFailure):
        outcome["retry"] = {"kind": "never"}
    elif isinstance(error, RetryAfter):
        at = error.at if error.at is not None else now_ms + (error.delay_ms or 0)
        outcome["retry"] = {"kind": "at", "at": at}
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def not_found(binding: str, attempt: int | None) -> FailureReport:
    outcome: FailureReport = {"ok": False, "error": _NOT_FOUND.format(binding)}
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def _spawn_wire(spawn: SpawnRequest, defaults: Mapping[str, object] | None) -> SpawnWire:
    wire: SpawnWire = {"id": spawn.id, "binding": spawn.binding, "payload": spawn.payload}
    options: dict[str, object] = dict(defaults or {})
    for key, value in spawn.options.items():
        name = camel_case(key)
        if value is not None or name not in options:  # None is "not given" (J-28): the default stays
            options[name] = _option_wire(value)
    if options:
        wire["options"] = options
    return wire


def _option_wire(value: object) -> object:
    to_wire = getattr(value, "to_wire", None)  # backoff objects (J-100)
    return to_wire() if callable(to_wire) else value
