"""Cron edge cases beyond the worked examples (S-6..S-9) and the every_ms arithmetic (S-10)."""

from __future__ import annotations

import datetime as dt

import pytest

from tsumugi import InvalidCronError
from tsumugi.core.cron import next_cron_at, parse_cron
from tsumugi.core.schedules import next_occurrence


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


def iso(at_ms: int) -> str:
    return dt.datetime.fromtimestamp(at_ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M")


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        # S-7: the step is read before the range it divides
        ("5-1/0 * * * *", "minute step value out of range (1-60): 0"),
        ("1-2-3/0 * * * *", "minute step value out of range (1-60): 0"),
        ("70-80/5 * * * *", "minute value out of range (0-59): 70"),
        # labels of every field
        ("* 24 * * *", "hour value out of range (0-23): 24"),
        ("* * 32 * *", "day of month value out of range (1-31): 32"),
        ("* * * 0 *", "month value out of range (1-12): 0"),
        ("* * * 13 *", "month value out of range (1-12): 13"),
        ("* * * * */9", "day of week step value out of range (1-8): 9"),
        ("* */25 * * *", "hour step value out of range (1-24): 25"),
        ("* * * 1,,2 *", "empty month entry: 1,,2"),
        ("* * , * *", "empty day of month entry: ,"),
        ("* * * * 1-2/3/4", "invalid day of week step: 1-2/3/4"),
        ("* 3/2 * * *", "step requires a range: 3/2"),
        ("* * * 6-3 *", "month range is reversed: 6-3"),
        ("* * * * 1-2-3", "invalid day of week range: 1-2-3"),
        # values are decimal digits (or ADR-0146's names): no signs or wildcards inside ranges
        ("-5 * * * *", "invalid minute value: "),
        ("+5 * * * *", "invalid minute value: +5"),
        ("*-5 * * * *", "invalid minute value: *"),
        ("1.5 * * * *", "invalid minute value: 1.5"),
        ("0 0 ? * *", "invalid day of month value: ?"),
        ("0 0 L * *", "invalid day of month value: L"),
        ("0 0 1W * *", "invalid day of month value: 1W"),
        ("0 0 * * 5#2", "invalid day of week value: 5#2"),
        ("0 0 * * sunday", "invalid day of week value: sunday"),  # ADR-0146: three-letter names only
        # S-6: field count counts whitespace-separated fields of the trimmed text, message keeps the input
        ("", "expected 5 fields (minute hour day month weekday): "),
        ("0 0 * * * 2026", "expected 5 fields (minute hour day month weekday): 0 0 * * * 2026"),
    ],
)
def test_more_grammar_errors(expr: str, message: str) -> None:
    # S-6, S-7
    with pytest.raises(InvalidCronError) as info:
        parse_cron(expr)
    assert str(info.value) == message


def test_accepted_forms() -> None:
    # S-6, S-7
    assert parse_cron("0\t3\n*  *   *").hours == (3,)  # any whitespace separates fields
    assert parse_cron("*/60 * * * *").minutes == (0,)  # step up to max-min+1
    assert parse_cron("0-59/60 * * * *").minutes == (0,)
    assert parse_cron("0 0 * * */8").weekdays == frozenset({0})
    assert parse_cron("0 0 * * 0,7").weekdays == frozenset({0})  # 7 = Sunday = 0
    assert parse_cron("0 0 * * 5-7").weekdays == frozenset({5, 6, 0})
    assert parse_cron("00 007 * * *").hours == (7,)  # leading zeros are fine
    assert parse_cron("1-3,2-4 * * * *").minutes == (1, 2, 3, 4)  # entries are unioned
    assert sorted(parse_cron("0 0 1-31/10 * *").days) == [1, 11, 21, 31]


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        # S-8: a literal "*" is the only unrestricted day field
        ("0 0 1 * 1", "2026-01-02T00:00", "2026-01-05T00:00"),  # Monday before the 1st: OR
        ("0 0 * * 1", "2026-01-02T00:00", "2026-01-05T00:00"),
        ("0 0 */1 * 1", "2026-01-02T00:00", "2026-01-03T00:00"),  # */1 restricts -> OR -> every day
        ("0 0 1-31 * 1", "2026-01-02T00:00", "2026-01-03T00:00"),
        ("0 0 1 * *", "2026-01-02T00:00", "2026-02-01T00:00"),
        # S-9: strictly after, minute aligned, seconds ignored
        ("30 10 * * *", "2026-01-05T10:30", "2026-01-06T10:30"),
        ("30 10 * * *", "2026-01-05T10:29", "2026-01-05T10:30"),
        ("0 0 * * 0", "2026-01-03T23:59", "2026-01-04T00:00"),  # 2026-01-04 is a Sunday
        ("0 0 * * 7", "2026-01-03T23:59", "2026-01-04T00:00"),
        ("59 23 31 12 *", "2026-12-31T23:59", "2027-12-31T23:59"),
        ("0 12 * 2 *", "2026-03-01T00:00", "2027-02-01T12:00"),
    ],
)
def test_more_next_cron_at(expr: str, after: str, expected: str) -> None:
    # S-8, S-9
    assert iso(next_cron_at(parse_cron(expr), ms(after))) == expected


def test_seconds_inside_the_minute_are_floored() -> None:
    # S-9: start at floor(after / 60000) * 60000 + 60000
    at = ms("2026-01-05T10:20") + 59_999
    assert next_cron_at(parse_cron("* * * * *"), at) == ms("2026-01-05T10:21")


@pytest.mark.parametrize("expr", ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 6,9,11 *"])
def test_impossible_dates_never_fire(expr: str) -> None:
    # S-9
    with pytest.raises(InvalidCronError, match=r"^no occurrence within 1830 days$"):
        next_cron_at(parse_cron(expr), ms("2024-01-01T00:00"))


def test_every_ms_exactly_on_a_grid_point_moves_one_interval_on() -> None:
    # S-10: strictly after now; previous == now gives previous + every
    assert next_occurrence(60_000, None, 1_000_000, 1_000_000) == 1_060_000
    assert next_occurrence(60_000, None, 1_000_000, 1_060_000) == 1_120_000
    assert next_occurrence(60_000, None, 1_000_000, 999_000) == 1_060_000  # now before previous


def test_cron_next_occurrence_without_previous_uses_now() -> None:
    # S-10
    spec = parse_cron("*/15 * * * *")
    assert iso(next_occurrence(None, spec, None, ms("2026-01-05T10:15"))) == "2026-01-05T10:30"


def test_next_occurrence_also_takes_the_spec_timing_form() -> None:
    # S-10: next_occurrence(timing, previous, now) with {every_ms, cron}
    assert next_occurrence({"every_ms": 60_000, "cron": None}, None, 1_000_000) == 1_060_000
    assert next_occurrence({"every_ms": 60_000}, 1_060_000, 1_181_000) == 1_240_000  # S-11 catch-up
    hourly = {"every_ms": None, "cron": "0 * * * *"}
    assert next_occurrence(hourly, None, 3_600_000 * 10 + 5) == 3_600_000 * 11
