"""Node results: the 8,192-character limit, fan-out summaries and collected child results (ADR-0072)."""
# F-46, F-36 (aggregate), F-50, F-53; ADR-0072 for ``collect``

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue

RESULT_LIMIT_CHARS: Final = 8192  # F-46: a node result is stored in the run's SQLite row
RESULT_ERROR: Final = "cannot store the result (over 8192 chars or not serializable)"

# ADR-0072: a collecting fan-out hands every child result to its dependents in one dict. Each result is
# at most 8,192 chars, so 1,000 children bound the dict to about 8 MB of JSON text in coordinator memory.
MAX_COLLECTED_CHILDREN: Final = 1000


def encode_result(value: object) -> tuple[str | None, str | None]:
    """``(json_text, None)`` for a storable result, ``(None, error)`` for one the run refuses.

    ``None`` is stored as no result at all.
    """
    # F-46
    if value is None:
        return None, None
    try:
        text = wire_format.dumps(value)
    except (TypeError, ValueError):
        return None, RESULT_ERROR
    if wire_format.utf16_len(text) > RESULT_LIMIT_CHARS:
        return None, RESULT_ERROR
    return text, None


def decode_result(text: str | None) -> JsonValue:
    """The JSON-decoded stored result; None when nothing was stored."""
    # F-42
    return None if text is None else wire_format.load_value(text)


def fan_out_summary(child_states: Iterable[str]) -> dict[str, int]:
    """``{total, succeeded, failed}`` over the direct children (only COMPLETED succeeds)."""
    # F-36
    states = list(child_states)
    succeeded = sum(1 for s in states if s == "COMPLETED")
    return {"total": len(states), "succeeded": succeeded, "failed": len(states) - succeeded}


def collected_dep_value(summary: JsonMapping, child_results: Mapping[str, JsonValue]) -> JsonObject:
    """The dependency value of a collecting fan-out: the summary plus ``results`` by child key."""
    return {**summary, "results": dict(child_results)}


def collect_limit_error(node_id: str) -> str:
    return f"fan-out collects at most {MAX_COLLECTED_CHILDREN} results: {node_id}"
