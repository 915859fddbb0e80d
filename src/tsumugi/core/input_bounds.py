"""What every entry path accepts, so both runtimes store the same values (ADR-0133).

The original keeps numbers as JavaScript doubles, so it takes any finite number; SQLite on CPython takes
integers only within int64, and Durable Object SQL and D1 only within ±(2^53 - 1). Numbers are therefore
clamped to the range both can hold, at the edge where they come in, instead of failing deep in a store.
Strings are stored as the Workers runtime stores a JavaScript string. The bound on a payload's size is
``wire_format.MAX_PAYLOAD_BYTES``.
"""

from __future__ import annotations

import re
from typing import Final

MAX_SAFE_INTEGER: Final = 2**53 - 1  # Number.MAX_SAFE_INTEGER: DO SQL and D1 refuse larger integers
# The latest instant a JavaScript Date holds (10^8 days after the epoch); Durable Object alarms take Dates.
MAX_INSTANT_MS: Final = 8_640_000_000_000_000
# Half of that, so that now plus any duration (a delay, a timeout, a unique window) is still an instant
# for the next 136,000 years.
MAX_DURATION_MS: Final = MAX_INSTANT_MS // 2
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def clamp_number(value: float, bound: int) -> float:
    """``value`` within ``[-bound, bound]``; a value inside keeps its type (an int stays an int)."""
    if value > bound:
        return bound
    if value < -bound:
        return -bound
    return value


def clamp_instant(value: float) -> float:
    """An epoch-ms instant within what a JavaScript Date holds (run_at, expires_at, created bounds)."""
    return clamp_number(value, MAX_INSTANT_MS)


def clamp_duration(value: float) -> float:
    """A span of milliseconds short enough that ``now + value`` is still an instant."""
    return clamp_number(value, MAX_DURATION_MS)


def clamp_safe(value: float) -> float:
    """A number within ±(2^53 - 1): priorities and attempt counts."""
    return clamp_number(value, MAX_SAFE_INTEGER)


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as a JavaScript string is stored as UTF-8.

    Python's ``json`` decodes ``"\\ud800"`` to a lone surrogate, which UTF-8 cannot encode.
    """
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)
