"""Five-field cron in UTC with minute precision, written here without a library.

The grammar is small: ``*``, ``N``, ``A-B``, ``*/S``, ``A-B/S`` and commas; month names (``JAN``..``DEC``)
and day names (``SUN``..``SAT``) in any case; and the macros ``@yearly`` (``@annually``), ``@monthly``,
``@weekly``, ``@daily`` (``@midnight``) and ``@hourly``. No ``?``/``L``/``W``/``#``, no seconds, no time
zones.
"""

# S-6..S-9 and ADR-0071 (no library); names and macros are ADR-0146's extension of S-7, which refuses them.

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, NamedTuple

from tsumugi.errors import InvalidCronError

MINUTE_MS: Final = 60_000
DAY_MS: Final = 86_400_000
SEARCH_DAYS: Final = 1830  # S-9: five years covers every leap-day rhythm (a Feb 29 fires within four)


class _Field(NamedTuple):
    label: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] stands for the value low + i (ADR-0146)


_MONTH_NAMES: Final = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAY_NAMES: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_FIELDS: Final = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTH_NAMES),
    _Field("day of week", 0, 7, _DAY_NAMES),
)
# ADR-0146: each macro is the five fields it stands for, as common crons define them.
MACROS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A parsed expression: the allowed values of each field and which day fields restrict."""

    # S-8

    expr: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday; 7 is folded into 0 (S-6)
    days_restricted: bool
    weekdays_restricted: bool

    def matches_day(self, day: dt.date) -> bool:
        """Month must match; day-of-month and day-of-week are OR-ed only when both restrict."""
        # S-8
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.weekday() + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow


def _value(text: str, label: str, low: int, high: int, names: tuple[str, ...] = ()) -> int:
    if names and text.upper() in names:
        return low + names.index(text.upper())
    if not text.isascii() or not text.isdigit():
        raise InvalidCronError(f"invalid {label} value: {text}")
    value = int(text)
    if not low <= value <= high:
        raise InvalidCronError(f"{label} value out of range ({low}-{high}): {text}")
    return value


def _entry(entry: str, field: _Field) -> set[int]:
    """One comma-separated entry of a field."""
    # S-7
    parts = entry.split("/")
    if len(parts) > 2:
        raise InvalidCronError(f"invalid {field.label} step: {entry}")
    span = parts[0]
    if len(parts) == 2 and span != "*" and "-" not in span:
        raise InvalidCronError(f"step requires a range: {entry}")
    # The step is read before the range, so "5-1/0" reports the step (the original's order).
    step = _value(parts[1], f"{field.label} step", 1, field.high - field.low + 1) if len(parts) == 2 else 1
    if span == "*":
        start, end = field.low, field.high
    else:
        bounds = span.split("-")
        if len(bounds) > 2:
            raise InvalidCronError(f"invalid {field.label} range: {span}")
        start = _value(bounds[0], field.label, field.low, field.high, field.names)
        end = _value(bounds[-1], field.label, field.low, field.high, field.names)
        if start > end:
            raise InvalidCronError(f"{field.label} range is reversed: {span}")
    return set(range(start, end + 1, step))


def _field(text: str, field: _Field) -> set[int]:
    values: set[int] = set()
    for entry in text.split(","):
        if not entry:
            raise InvalidCronError(f"empty {field.label} entry: {text}")
        values |= _entry(entry, field)
    return values


def parse_cron(expr: object) -> CronSpec:
    """Parse a five-field expression or a macro; raise ``InvalidCronError`` saying what is wrong."""
    text = expr.strip() if isinstance(expr, str) else ""
    if text.startswith("@") and text.lower() not in MACROS:
        raise InvalidCronError(f"unknown cron macro: {text} (use {', '.join(MACROS)})")
    fields = MACROS.get(text.lower(), text).split()
    if len(fields) != 5:
        raise InvalidCronError(f"expected 5 fields (minute hour day month weekday): {expr}")
    minutes, hours, days, months, weekdays = (_field(t, f) for t, f in zip(fields, _FIELDS, strict=True))
    return CronSpec(
        expr=text,
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        days=frozenset(days),
        months=frozenset(months),
        weekdays=frozenset(0 if d == 7 else d for d in weekdays),
        days_restricted=fields[2] != "*",  # S-8: only a literal "*" is unrestricted
        weekdays_restricted=fields[4] != "*",
    )


def next_cron_at(spec: CronSpec, after_ms: int) -> int:
    """The first matching minute strictly after ``after_ms``."""
    # S-9
    cursor = after_ms // MINUTE_MS * MINUTE_MS + MINUTE_MS
    day_start = cursor // DAY_MS * DAY_MS
    first_minute = (cursor - day_start) // MINUTE_MS
    epoch = dt.date(1970, 1, 1)
    for offset in range(SEARCH_DAYS):  # days 0..1829 from the cursor's day (S-9)
        day = epoch + dt.timedelta(milliseconds=day_start + offset * DAY_MS)
        if not spec.matches_day(day):
            continue
        floor = first_minute if offset == 0 else 0
        for hour in spec.hours:
            for minute in spec.minutes:
                if hour * 60 + minute >= floor:
                    return day_start + offset * DAY_MS + (hour * 60 + minute) * MINUTE_MS
    raise InvalidCronError(f"no occurrence within {SEARCH_DAYS} days")
