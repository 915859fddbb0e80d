"""JSON as the original writes and measures it (J-3): compact, unescaped, NaN -> null, UTF-16 lengths."""

from __future__ import annotations

import json
import math
from typing import Any, Final

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


_AS_IS: Final = frozenset({str, int, bool, type(None)})  # exact types JSON prints as JS does


def _js_safe(value: Any) -> Any:
    """Replace what JS JSON.stringify would print differently: NaN/Inf -> None, 1.0 -> 1."""
    if type(value) in _AS_IS:  # the common leaves first, without the isinstance chain (ADR-0105)
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if isinstance(value, dict):
        return {str(k): _js_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_safe(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Serialize like JS ``JSON.stringify`` (integral floats print as ``1``, A-10).

    Raises TypeError (or ValueError for circular data) when the value cannot be serialized.
    """
    return _encoder.encode(_js_safe(value))


def loads(text: str) -> Any:
    return json.loads(text)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit the original's limits are written in (J-3)."""
    return len(text.encode("utf-16-le")) // 2


def quote(value: str) -> str:
    """The JSON-quoted form used inside error messages (J-13)."""
    return dumps(value)
