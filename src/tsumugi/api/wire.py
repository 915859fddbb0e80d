"""Wire helpers: JS-compatible JSON responses, body parsing, query numbers."""
# A-2..A-5, A-10, A-29

from __future__ import annotations

import json
import math
import re
from typing import Final, NoReturn, TypeGuard

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from tsumugi.core import wire_format
from tsumugi.core.input_bounds import clamp_instant
from tsumugi.core.json_types import JsonValue

JSON_MEDIA_TYPE: Final = "application/json; charset=UTF-8"  # as the original framework sends it
HTML_MEDIA_TYPE: Final = "text/html; charset=UTF-8"
TEXT_MEDIA_TYPE: Final = "text/plain; charset=UTF-8"

# JS Number() accepts surrounding whitespace, exponents, Infinity and 0x/0o/0b literals.
_DECIMAL: Final = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_RADIX: Final = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")
_JS_SPACE: Final = (
    " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_BASES: Final = {"x": 16, "o": 8, "b": 2}


# ADR-0133: a body is read up to this size and refused beyond it. Far above the largest payload a job may
# carry (MAX_PAYLOAD_BYTES, 120 KiB of JSON) even when a client escapes every character, far below what
# would strain the server's memory.
MAX_BODY_BYTES: Final = 1024 * 1024
BODY_TOO_LARGE: Final = f"body must not exceed {MAX_BODY_BYTES} bytes"


class BodyError(Exception):
    """A request body refused with 400 ``{"error": message}``; carries the exact wire message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TooLargeError(Exception):
    """A body or payload over its limit: the pipeline answers 413 ``{"error": message}`` (ADR-0133).

    Not a ``BodyError``, so it passes the routes' 400 handling on its way to the pipeline.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def json_response(body: object, status: int = 200) -> Response:
    """Compact JSON with integral numbers printed as integers.

    ``body`` is a JSON value or a typed shape of one; ``wire_format`` refuses anything else.
    """
    #
    return Response(wire_format.dumps(body), status_code=status, media_type=JSON_MEDIA_TYPE)


def error_response(message: str, status: int) -> Response:
    return json_response({"error": message}, status)


def refusal_response(message: str, status: int) -> Response:
    """the coordinator refused a mutation (409/410)."""
    #
    return json_response({"ok": False, "error": message}, status)


def not_found_text() -> Response:
    """the framework's default 404 body."""
    #
    return PlainTextResponse("404 Not Found", status_code=404, media_type=TEXT_MEDIA_TYPE)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(name)  # JSON.parse knows no NaN/Infinity literals


def _declared_length(request: Request) -> int | None:
    declared = request.headers.get("content-length")
    return int(declared) if declared is not None and declared.isdigit() else None


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, read chunk by chunk; ``TooLargeError`` as soon as it is known to exceed ``limit``.

    A declared ``Content-Length`` over the limit is refused before anything is read.
    """
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise TooLargeError(BODY_TOO_LARGE)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLargeError(BODY_TOO_LARGE)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_body(request: Request) -> JsonValue:
    """Parse the body as JSON whatever the Content-Type; raise BodyError on empty or invalid.

    A body over ``MAX_BODY_BYTES`` is refused with 413 before it is parsed (ADR-0133).
    """
    #
    raw = await read_body(request)
    # As the Fetch API's text(): a leading BOM is dropped and invalid UTF-8 becomes U+FFFD.
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        parsed: JsonValue = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise BodyError("body must be valid JSON") from exc
    return parsed


def js_number(text: str) -> float:
    """``Number(text)`` of JavaScript: NaN when the text is no number; the empty string is 0."""
    stripped = text.strip(_JS_SPACE)
    if stripped == "":
        return 0.0
    radix = _RADIX.fullmatch(stripped)
    if radix:
        try:
            return float(int(radix.group(2), _BASES[radix.group(1).lower()]))
        except ValueError:
            return math.nan
    if _DECIMAL.fullmatch(stripped):
        return float(stripped.replace("Infinity", "inf"))
    return math.nan


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """A JSON number that JS ``Number.isFinite`` accepts (booleans are not numbers)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def parse_paging(limit_text: str | None, offset_text: str | None) -> tuple[int, int]:
    """limit defaults to 20 (missing, 0, NaN, or below 1), floored, capped at 100; offset >= 0."""
    #
    limit = js_number(limit_text) if limit_text is not None else math.nan
    limit_int = 20 if math.isnan(limit) or limit < 1 else min(100, math.floor(min(limit, 1e9)))
    offset = js_number(offset_text) if offset_text is not None else math.nan
    offset_int = 0 if math.isnan(offset) or offset <= 0 else math.floor(min(offset, 2**53))
    return limit_int, offset_int


def optional_text(value: str | None) -> str | None:
    """A query filter: empty means absent."""
    #
    return value if value else None


def query_bound(value: str | None) -> float | None:
    """``created_from`` / ``created_to``: missing, empty or non-numeric are ignored, 0 counts."""
    #
    if value is None or value == "":
        return None
    number = js_number(value)
    if math.isnan(number):
        return None
    return clamp_instant(number)  # ADR-0133: a bound beyond every instant matches as that bound would
