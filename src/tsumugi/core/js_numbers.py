"""Numbers as JavaScript prints them, and JSON text written by those rules.

``wire_format.dumps`` lets the C encoder write the text and turns to ``js_text`` only when that text may
differ from what JavaScript writes: a float such as ``1.0``, an exponent, or NaN and the infinities.
"""
# J-3, A-10

from __future__ import annotations

import json
import math
from json import encoder as _json_encoder

_encode_string = _json_encoder.encode_basestring
_refuse = json.JSONEncoder().default  # raises TypeError naming the type, as ``json.dumps`` does


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


def js_text(value: object) -> str:
    """The careful pass: every value printed by JavaScript's rules (floats through ``js_number``).

    Compact and unescaped like ``wire_format.dumps``, whose lone-surrogate escaping it leaves to it.
    """
    if isinstance(value, str):
        return _encode_string(value)
    if value is None or value is True or value is False:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, dict):
        items = (_encode_string(_key(k)) + ":" + js_text(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_text(v) for v in value) + "]"
    return js_text(_refuse(value))  # raises TypeError, like json
