"""Schedule normalization and occurrence arithmetic (flows.md §23, §25)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.core.cron import parse_cron
from tsumugi.core.schedules import fingerprint, next_occurrence, normalize_schedules
from tsumugi.errors import InvalidScheduleError

SHARDS = {"Poll": 1, "Split": 4, "Locked": 1}
REQUIRES = {"Locked": frozenset({"concurrency_key"}), "Unique": frozenset({"unique_key"})}


def normalize(schedules: dict[str, dict[str, Any]]) -> list[Any]:
    return normalize_schedules(
        schedules, shards_of={**SHARDS, "Unique": 1}, requires_of=REQUIRES, flow_names={"REPORT"}
    )


def test_normalized_form_sorted_by_name_with_default_overlap() -> None:
    # S-5
    defs = normalize(
        {
            "b-nightly": {"flow": "REPORT", "input": {}, "cron": " 0 3 * * * "},
            "a-poll": {"binding": "Poll", "payload": {}, "every_ms": 300_000, "overlap": "overlap"},
        }
    )
    assert [d.fingerprint_entry() for d in defs] == [
        {
            "name": "a-poll",
            "kind": "job",
            "target": "Poll",
            "every_ms": 300_000,
            "cron": None,
            "overlap": "overlap",
        },
        {
            "name": "b-nightly",
            "kind": "flow",
            "target": "REPORT",
            "every_ms": None,
            "cron": "0 3 * * *",
            "overlap": "skip",
        },
    ]


def test_fingerprint_ignores_declaration_order_and_payloads() -> None:
    # S-5
    one = normalize(
        {
            "a": {"binding": "Poll", "payload": 1, "every_ms": 1000},
            "b": {"flow": "REPORT", "input": 1, "cron": "* * * * *"},
        }
    )
    two = normalize(
        {
            "b": {"flow": "REPORT", "input": 2, "cron": "* * * * *"},
            "a": {"binding": "Poll", "payload": 2, "every_ms": 1000, "priority": 5},
        }
    )
    assert fingerprint(one) == fingerprint(two)
    assert fingerprint(one).startswith('[{"name":"a","kind":"job"')


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        (
            "bad name",
            {},
            'invalid schedule name: "bad name" (alphanumeric, hyphen and underscore, up to 64 chars)',
        ),
        ("x" * 65, {}, "invalid schedule name"),
        ("s", {"unique_key": None}, "unique_key is not allowed in a schedule: s"),
        ("s", {"delay_ms": 5}, "delay_ms is not allowed in a schedule: s"),
        ("s", {"run_at": 5}, "run_at is not allowed in a schedule: s"),
        ("s", {"overlap": "wait"}, "overlap must be 'skip' or 'overlap': s"),
        ("s", {"binding": "Poll", "payload": 1}, "exactly one of every_ms and cron is required: s"),
        ("s", {"every_ms": 1000, "cron": "* * * * *"}, "exactly one of every_ms and cron is required: s"),
        ("s", {"every_ms": 999}, "every_ms must be an integer of at least 1000: s"),
        ("s", {"every_ms": True}, "every_ms must be an integer of at least 1000: s"),
        ("s", {"cron": "* * *"}, "invalid cron in schedule s: expected 5 fields"),
        ("s", {"cron": "0 0 31 2 *"}, "invalid cron in schedule s: no occurrence within 1830 days"),
        ("s", {"every_ms": 1000}, "exactly one of binding and flow is required: s"),
        ("s", {"every_ms": 1000, "binding": "Nope", "payload": 1}, "binding is not registered: s -> Nope"),
        ("s", {"every_ms": 1000, "binding": "Poll"}, "payload is required: s"),
        (
            "s",
            {"every_ms": 1000, "binding": "Split", "payload": 1},
            "partition_key is required for a sharded binding: s -> Split",
        ),
        ("s", {"every_ms": 1000, "flow": "NOPE", "input": 1}, "flow is not registered: s -> NOPE"),
        ("s", {"every_ms": 1000, "flow": "REPORT"}, "input is required: s"),
        (
            "s",
            {"every_ms": 1000, "binding": "Locked", "payload": 1},
            "concurrency_key is required by Locked: s",
        ),
        ("s", {"every_ms": 1000, "binding": "Unique", "payload": 1}, "Unique requires unique_key"),
    ],
)
def test_validation_order_and_messages(name: str, spec: dict[str, Any], message: str) -> None:
    # S-2, S-3
    with pytest.raises(InvalidScheduleError) as info:
        normalize({name: spec})
    assert str(info.value).startswith(message)


def test_integral_float_every_ms_is_accepted() -> None:
    # S-2.5
    assert normalize({"s": {"binding": "Poll", "payload": 1, "every_ms": 2000.0}})[0].every_ms == 2000


def test_every_ms_first_fire_is_one_interval_after_registration() -> None:
    # S-10
    assert next_occurrence(60_000, None, None, 1_000_000) == 1_060_000


def test_every_ms_keeps_phase_and_drops_missed_occurrences() -> None:
    # S-10, S-11: fired T on time -> T+60s; woken at T+181s -> fire T+60s, next is T+240s
    t = 10_000_000
    assert next_occurrence(60_000, None, t, t) == t + 60_000
    assert next_occurrence(60_000, None, t + 60_000, t + 181_000) == t + 240_000
    assert next_occurrence(60_000, None, t + 60_000, t + 120_000) == t + 180_000  # strictly after now


def test_cron_next_occurrence_uses_later_of_now_and_previous() -> None:
    # S-10
    spec = parse_cron("0 * * * *")
    hour = 3_600_000
    assert next_occurrence(None, spec, None, 10 * hour + 5) == 11 * hour
    assert next_occurrence(None, spec, 10 * hour, 13 * hour + 1) == 14 * hour
    assert next_occurrence(None, spec, 20 * hour, 13 * hour) == 21 * hour
