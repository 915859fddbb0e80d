"""JSON as the original writes and measures it: compact, unescaped, NaN -> null, UTF-16 lengths."""
# J-3

from __future__ import annotations

import json
import math
import re
from json import encoder as _json_encoder
from typing import Any, Final

from tsumugi.core.json_types import JsonValue

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The C encoder the line above builds on every call, built once (ADR-0120). Without circular-reference
# markers: circular data recurses until RecursionError.
_make_c_encoder = getattr(_json_encoder, "c_make_encoder", None)
_c_encode = (
    _make_c_encoder(
        None, _encoder.default, _json_encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _make_c_encoder is not None
    else None
)


_encode_string = _json_encoder.encode_basestring
# JSON.stringify is well-formed (ES2019): a lone surrogate prints as a \uXXXX escape, so the text is valid
# UTF-8 and parses back to the same string. Only text that is not ASCII can hold one.
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _escape_lone_surrogates(text: str) -> str:
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def js_number(value: float) -> str:
    """A float as JavaScript's ``Number.prototype.toString`` prints it (ECMAScript Number::toString).

    The shortest round-trip digits, as Python's ``repr`` finds them, laid out by JavaScript's rules:
    positional from 1e-6 up to 1e21 (``1e+16`` -> ``10000000000000000``, ``1.0`` -> ``1``), exponential
    outside (``1.5e-07`` -> ``1.5e-7``). NaN and infinities are ``null`` in JSON; ``-0`` prints as ``0``.
    """
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    text = repr(value)
    sign = "-" if text[0] == "-" else ""
    mantissa, _, exponent_text = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len(digits)
    # value = 0.<digits> x 10**point, in ECMAScript's terms
    point = len(whole) - leading_zeros + int(exponent_text or 0)
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        body = digits + "0" * (point - count)
    elif 0 < point <= 21:
        body = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        body = "0." + "0" * -point + digits
    else:
        power = point - 1
        body = (digits if count == 1 else digits[0] + "." + digits[1:]) + ("e+" if power > 0 else "e-")
        body += str(abs(power))
    return sign + body


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return "true" if key else ("false" if key is False else "null")
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return js_number(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _js_text(value: object) -> str:
    """The careful pass: every value printed by JavaScript's rules (floats through ``js_number``)."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is None or value is True or value is False:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, dict):
        items = (_encode_string(_key(k)) + ":" + _js_text(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_js_text(v) for v in value) + "]"
    return _js_text(_encoder.default(value))  # raises TypeError, like json


def _maybe_differs(text: str) -> bool:
    """Whether a float in ``text`` may print differently in JavaScript: ``1.0`` or an exponent.

    A string that merely contains ``.0`` or ``e-`` only costs the careful pass.
    """
    return ".0" in text or "e-" in text or "e+" in text


def dumps(value: object) -> str:
    """Serialize like JS ``JSON.stringify``: compact, unescaped, numbers as JavaScript prints them.

    Raises TypeError when the value cannot be serialized (RecursionError for circular data).
    """
    #
    try:
        text = "".join(_c_encode(value, 0)) if _c_encode is not None else _encoder.encode(value)
    except ValueError:  # NaN or infinity: the careful pass prints null
        return _escape_lone_surrogates(_js_text(value))
    # Python's float repr differs from JavaScript's for integral floats and exponents; when the text
    # shows neither, it is already what JS prints and the careful pass is skipped (ADR-0120).
    return _escape_lone_surrogates(_js_text(value) if _maybe_differs(text) else text)


def loads(text: str) -> Any:
    """``json.loads``; ``Any`` as json's own, since callers across the engine read fields straight off it.

    ``load_value`` is the same with the honest type, for code that narrows what it reads.
    """
    return json.loads(text)


def load_value(text: str) -> JsonValue:
    """``json.loads``, typed as the JSON value it returns."""
    value: JsonValue = json.loads(text)
    return value


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit the original's limits are written in."""
    # J-3
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # a lone surrogate is one unit too


def quote(value: str) -> str:
    """The JSON-quoted form used inside error messages."""
    # J-13
    return dumps(value)
