"""W3C Trace Context version 00 validation for ``traceparent``."""
# J-40

from __future__ import annotations

import re
from typing import Final

from tsumugi.errors import EnqueueError

_TRACEPARENT_RE: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")
TRACEPARENT_ERROR: Final = "traceparent must be a valid W3C Trace Context version 00 value"


def validate_traceparent(value: object) -> str | None:
    """Return the value (None stays None) if it is a valid version-00 traceparent, else raise."""
    if value is None:
        return None
    match = _TRACEPARENT_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
        raise EnqueueError(TRACEPARENT_ERROR)
    return str(value)
