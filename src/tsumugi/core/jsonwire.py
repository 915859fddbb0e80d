"""JSON as the original writes and measures it (J-3): compact, unescaped, NaN -> null, UTF-16 lengths."""

from __future__ import annotations

import json
import math
from json import encoder as _json_encoder
from typing import Any, Final

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The C encoder the line above builds on every call, built once (ADR-0120). Without circular-reference
# markers: circular data recurses until RecursionError, and the careful pass then names the problem.
_make_c_encoder = getattr(_json_encoder, "c_make_encoder", None)
_c_encode = (
    _make_c_encoder(
        None, _encoder.default, _json_encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _make_c_encoder is not None
    else None
)


_AS_IS: Final = frozenset({str, int, bool, type(None)})  # exact types JSON prints as JS does


def _js_safe(value: Any) -> Any:
    """Replace what JS JSON.stringify would print differently: NaN/Inf -> None, 1.0 -> 1.

    Keys are left to the encoder, which prints them as JSON does (``True`` -> ``"true"``).
    """
    if type(value) in _AS_IS:  # the common leaves first, without the isinstance chain (ADR-0105)
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: _js_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_safe(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Serialize like JS ``JSON.stringify`` (integral floats print as ``1``, A-10).

    Raises TypeError (or ValueError for circular data) when the value cannot be serialized.
    """
    try:
        text = "".join(_c_encode(value, 0)) if _c_encode is not None else _encoder.encode(value)
    except (ValueError, RecursionError):  # NaN or infinity, or circular data: the careful pass decides
        return _encoder.encode(_js_safe(value))
    # Python prints an integral float below 2**53 as "1.0"; without ".0" the text is already what JS
    # prints, and the walk over the value is skipped (ADR-0120). A string holding ".0" only costs the walk.
    return _encoder.encode(_js_safe(value)) if ".0" in text else text


def loads(text: str) -> Any:
    return json.loads(text)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit the original's limits are written in (J-3)."""
    return len(text.encode("utf-16-le")) // 2


def quote(value: str) -> str:
    """The JSON-quoted form used inside error messages (J-13)."""
    return dumps(value)
