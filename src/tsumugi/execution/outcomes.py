"""Report payloads the consumer sends to the shard (J-119, J-73, J-76)."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import Any, Final

from tsumugi.core.config_checks import camel_case
from tsumugi.errors import PermanentFailure, RetryAfter, TsumugiTimeoutError
from tsumugi.performer import SpawnRequest
from tsumugi.ports import JsonDict

__all__ = ["error_text", "failure", "not_found", "success"]

_NOT_FOUND: Final = "performer not found: {} (export it, or add a service binding)"  # J-61


def error_text(error: BaseException) -> str:
    """The attempt's error text: the Python traceback (J-73 [PORT]); the shard truncates it."""
    if isinstance(error, TsumugiTimeoutError):
        return f"TsumugiTimeoutError: {error}"  # raised by the consumer, not the performer: no stack
    try:
        return "".join(traceback.format_exception(error))
    except Exception:
        return f"{type(error).__name__}: {error}"


def success(result: Any, spawns: Sequence[SpawnRequest], attempt: Any) -> JsonDict:
    """``{ok: true, result, spawns?, attempt}``; spawns only when non-empty (J-119)."""
    outcome: JsonDict = {"ok": True, "result": result}
    if spawns:
        outcome["spawns"] = [_spawn_wire(spawn) for spawn in spawns]
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def failure(error: BaseException, attempt: Any, now_ms: int) -> JsonDict:
    """``{ok: false, error, retry?, attempt}``; a performer's retry signal becomes data (J-76)."""
    outcome: JsonDict = {"ok": False, "error": error_text(error)}
    if isinstance(error, PermanentFailure):
        outcome["retry"] = {"kind": "never"}
    elif isinstance(error, RetryAfter):
        at = error.at if error.at is not None else now_ms + (error.delay_ms or 0)
        outcome["retry"] = {"kind": "at", "at": at}
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def not_found(binding: str, attempt: Any) -> JsonDict:
    outcome: JsonDict = {"ok": False, "error": _NOT_FOUND.format(binding)}
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome


def _spawn_wire(spawn: SpawnRequest) -> JsonDict:
    wire: JsonDict = {"id": spawn.id, "binding": spawn.binding, "payload": spawn.payload}
    if spawn.options:
        wire["options"] = {camel_case(k): _option_wire(v) for k, v in spawn.options.items()}
    return wire


def _option_wire(value: Any) -> Any:
    to_wire = getattr(value, "to_wire", None)  # backoff objects (J-100)
    return to_wire() if callable(to_wire) else value
