"""Cron grammar and next occurrence (flows.md §24)."""

from __future__ import annotations

import datetime as dt

import pytest

from tsumugi.core.cron import next_cron_at, parse_cron
from tsumugi.errors import InvalidCronError


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


def iso(at_ms: int) -> str:
    return dt.datetime.fromtimestamp(at_ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def test_field_values_and_steps_count_from_range_start() -> None:
    # S-7
    assert parse_cron("*/15 * * * *").minutes == (0, 15, 30, 45)
    assert sorted(parse_cron("0 0 */10 * *").days) == [1, 11, 21, 31]
    assert parse_cron("10-30/10 * * * *").minutes == (10, 20, 30)
    assert parse_cron("1,5-6,005 * * * *").minutes == (1, 5, 6)
    assert parse_cron("  0 3 * * *  ").expr == "0 3 * * *"  # S-6: trimmed


def test_month_and_day_names_in_any_case() -> None:
    # ADR-0146: an extension of S-7, which refuses names; each name is its number
    assert parse_cron("0 9 * * MON").weekdays == frozenset({1})
    assert parse_cron("0 9 * * mon-Fri").weekdays == parse_cron("0 9 * * 1-5").weekdays
    assert parse_cron("0 0 * * SUN,SAT").weekdays == frozenset({0, 6})
    assert parse_cron("0 0 1 JAN-JUN/2 *").months == frozenset({1, 3, 5})
    assert parse_cron("0 0 1 dec *").months == frozenset({12})
    named = parse_cron("0 9 * * MON")
    assert (named.days_restricted, named.weekdays_restricted) == (False, True)  # S-8 as for "1"


@pytest.mark.parametrize(
    ("macro", "fields"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        (" @Daily ", "0 0 * * *"),
    ],
)
def test_macros_are_their_five_fields(macro: str, fields: str) -> None:
    # ADR-0146: the macro keeps its text; it fires exactly as its fields do
    spec, expected = parse_cron(macro), parse_cron(fields)
    assert spec.expr == macro.strip()
    assert (spec.minutes, spec.hours, spec.days, spec.months, spec.weekdays) == (
        expected.minutes,
        expected.hours,
        expected.days,
        expected.months,
        expected.weekdays,
    )
    assert (spec.days_restricted, spec.weekdays_restricted) == (
        expected.days_restricted,
        expected.weekdays_restricted,
    )
    after = ms("2026-01-05T10:20:30")
    assert next_cron_at(spec, after) == next_cron_at(expected, after)


def test_day_of_week_seven_is_sunday() -> None:
    # S-6
    assert parse_cron("0 0 * * 7").weekdays == frozenset({0})


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("* * * *", "expected 5 fields (minute hour day month weekday): * * * *"),
        ("* * * * * *", "expected 5 fields (minute hour day month weekday): * * * * * *"),
        ("1,,2 * * * *", "empty minute entry: 1,,2"),
        ("*/2/3 * * * *", "invalid minute step: */2/3"),
        ("5/2 * * * *", "step requires a range: 5/2"),
        ("* 1-2-3 * * *", "invalid hour range: 1-2-3"),
        ("* * 5-1 * *", "day of month range is reversed: 5-1"),
        ("* * * JAM *", "invalid month value: JAM"),  # ADR-0146: names are accepted, misspelt ones not
        ("* * * * MOO", "invalid day of week value: MOO"),
        ("MON * * * *", "invalid minute value: MON"),  # names only where they name a month or a day
        (
            "@reboot",
            "unknown cron macro: @reboot"
            " (use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)",
        ),
        ("60 * * * *", "minute value out of range (0-59): 60"),
        ("* * 0 * *", "day of month value out of range (1-31): 0"),
        ("* * * * 8", "day of week value out of range (0-7): 8"),
        ("*/0 * * * *", "minute step value out of range (1-60): 0"),
        ("*/61 * * * *", "minute step value out of range (1-60): 61"),
        ("*/x * * * *", "invalid minute step value: x"),
        ("? * * * *", "invalid minute value: ?"),
        ("L * * * *", "invalid minute value: L"),
    ],
)
def test_grammar_errors(expr: str, message: str) -> None:
    # S-6, S-7
    with pytest.raises(InvalidCronError) as info:
        parse_cron(expr)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        ("* * * * *", "2026-01-05T10:20:30", "2026-01-05T10:21:00"),
        ("0 3 * * *", "2026-01-05T03:00:00", "2026-01-06T03:00:00"),
        ("0 0 13 * 5", "2026-01-05T12:00:00", "2026-01-09T00:00:00"),
        ("0 0 29 2 *", "2025-03-01T00:00:00", "2028-02-29T00:00:00"),
        ("30 9 * * 1-5", "2026-01-09T10:00:00", "2026-01-12T09:30:00"),
        ("0 0 */2 * 1", "2026-01-01T12:00:00", "2026-01-03T00:00:00"),
        ("0 0 1 * *", "2026-12-31T23:59:59", "2027-01-01T00:00:00"),
    ],
)
def test_next_cron_at_examples(expr: str, after: str, expected: str) -> None:
    # S-9 examples; S-8 OR semantics when both day fields restrict (*/2 counts as restricted)
    assert iso(next_cron_at(parse_cron(expr), ms(after))) == expected


def test_day_fields_and_when_only_one_restricts() -> None:
    # S-8: "* * 13 * *" matches only the 13th; with weekday "*" the weekday does not widen it
    at = next_cron_at(parse_cron("0 0 13 * *"), ms("2026-01-05T00:00:00"))
    assert iso(at) == "2026-01-13T00:00:00"


def test_never_firing_expression_raises() -> None:
    # S-9
    with pytest.raises(InvalidCronError, match="no occurrence within 1830 days"):
        next_cron_at(parse_cron("0 0 31 2 *"), ms("2026-01-01T00:00:00"))


def test_result_is_strictly_after_and_minute_aligned() -> None:
    # S-9
    spec = parse_cron("*/5 * * * *")
    at = ms("2026-01-05T10:05:00")
    nxt = next_cron_at(spec, at)
    assert nxt > at and nxt % 60_000 == 0
    assert iso(nxt) == "2026-01-05T10:10:00"
