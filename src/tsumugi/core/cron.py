"""Five-field cron in UTC with minute precision (S-6..S-9; ADR-0071: written here, no library).

The grammar is deliberately small: ``*``, ``N``, ``A-B``, ``*/S``, ``A-B/S`` and commas. No names,
no ``?``/``L``/``W``/``#``, no seconds, no time zones.
"""

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


_FIELDS: Final = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12),
    _Field("day of week", 0, 7),
)


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A parsed expression: the allowed values of each field and which day fields restrict (S-8)."""

    expr: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday; 7 is folded into 0 (S-6)
    days_restricted: bool
    weekdays_restricted: bool

    def matches_day(self, day: dt.date) -> bool:
        """Month must match; day-of-month and day-of-week are OR-ed only when both restrict (S-8)."""
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.weekday() + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow


def _value(text: str, label: str, low: int, high: int) -> int:
    if not text.isascii() or not text.isdigit():
        raise InvalidCronError(f"invalid {label} value: {text}")
    value = int(text)
    if not low <= value <= high:
        raise InvalidCronError(f"{label} value out of range ({low}-{high}): {text}")
    return value


def _entry(entry: str, field: _Field) -> set[int]:
    """One comma-separated entry of a field (S-7)."""
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
        start = _value(bounds[0], field.label, field.low, field.high)
        end = _value(bounds[-1], field.label, field.low, field.high)
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


def parse_cron(expr: str) -> CronSpec:
    """Parse a five-field expression; raise InvalidCronError with the S-7 message on any mistake."""
    text = expr.strip() if isinstance(expr, str) else ""
    fields = text.split()
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
    """The first matching minute strictly after ``after_ms`` (S-9)."""
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
