"""Plain-text building blocks of the operator commands' output: aligned tables, instants, durations, JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel

CELL_LIMIT = 60  # a table cell longer than this is cut: a table row should fit a terminal line
NONE = "-"  # how a table shows a missing value
MS_PER_S = 1000
S_PER_MIN = 60
MIN_PER_H = 60


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[str] = ()) -> str:
    """``headers`` over ``rows``, columns two spaces apart; the columns named in ``right`` align right."""
    cells = [[_cut(cell) for cell in row] for row in rows]
    widths = [max([len(header)] + [len(row[i]) for row in cells]) for i, header in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            value.rjust(width) if header in right else value.ljust(width)
            for header, value, width in zip(headers, values, widths, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), *(line(row) for row in cells)]) + "\n"


def fields(pairs: Sequence[tuple[str, str]]) -> str:
    """``name: value`` lines with the values aligned."""
    width = max(len(name) for name, _ in pairs) + 2
    return "".join(f"{name + ':':<{width}}{value}\n" for name, value in pairs)


def instant(epoch_ms: int | None) -> str:
    """An epoch-ms instant in UTC, to the second (``2026-05-01 12:00:03``); ``-`` when absent."""
    if epoch_ms is None:
        return NONE
    return datetime.fromtimestamp(epoch_ms / MS_PER_S, UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration(ms: float | None) -> str:
    """``850 ms``, ``12.3 s``, ``4 min 05 s``, ``2 h 07 min``; ``-`` when absent."""
    if ms is None:
        return NONE
    if ms < MS_PER_S:
        return f"{ms:.0f} ms"
    seconds = ms / MS_PER_S
    if seconds < S_PER_MIN:
        return f"{seconds:.1f} s"
    minutes, second = divmod(int(seconds), S_PER_MIN)
    if minutes < MIN_PER_H:
        return f"{minutes} min {second:02d} s"
    hours, minute = divmod(minutes, MIN_PER_H)
    return f"{hours} h {minute:02d} min"


def text_or_none(value: object) -> str:
    return NONE if value is None else str(value)


def json_text(value: BaseModel | object) -> str:
    """What ``--json`` prints: the wire shape of a REST answer (names), indented."""
    #
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def decoded_json(text: str | None) -> str:
    """A JSON string from the API (a payload, a result), indented; shown as it is if it does not parse."""
    if text is None:
        return NONE
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _cut(cell: str) -> str:
    cell = " ".join(cell.split())  # one line per row: newlines in an error message become spaces
    return cell if len(cell) <= CELL_LIMIT else cell[: CELL_LIMIT - 1] + "…"
