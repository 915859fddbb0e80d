"""Definition mistakes are named with their fix (issue 14, ADR-0146): performers, backoff, schedules."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import (
    ConfigurationError,
    EnqueueError,
    InvalidScheduleError,
    JobContext,
    Performer,
    define_tsumugi,
)
from tsumugi.core.options import to_wire_input


class Ok(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Other(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


def test_a_list_of_performers_says_it_must_be_a_mapping_and_shows_one() -> None:
    with pytest.raises(ConfigurationError) as refused:
        define_tsumugi(performers=[Ok, Other])
    assert str(refused.value) == (
        "performers must be a mapping of binding name to performer class, "
        'e.g. performers={"Ok": Ok, "Other": Other}; got a list'
    )
    with pytest.raises(ConfigurationError, match=r"^performers is required: a mapping of binding name"):
        define_tsumugi()  # absent: the original's message


@pytest.mark.parametrize(
    ("backoff", "named"),
    [
        ({"type": "fixed", "delay_ms": 100}, "got None; unknown key 'type' ("),
        ({"kind": "linear"}, "got 'linear' ("),
    ],
)
def test_a_backoff_names_the_wrong_key_and_the_accepted_ones(backoff: dict[str, Any], named: str) -> None:
    with pytest.raises(EnqueueError) as refused:
        to_wire_input({"binding": "Ok", "payload": None, "backoff": backoff})
    message = str(refused.value)
    assert message.startswith("backoff.kind must be 'fixed' or 'exponential', ")  # the original's words first
    assert named in message
    assert message.endswith(
        "(a fixed backoff takes kind, delay_ms and jitter; "
        "an exponential one kind, base_ms, factor, max_ms and jitter)"
    )


def test_a_misspelt_backoff_field_lists_the_fields() -> None:
    with pytest.raises(
        EnqueueError, match=r"backoff: unknown field 'delay' \(a fixed backoff takes kind, delay_ms"
    ):
        to_wire_input({"binding": "Ok", "payload": None, "backoff": {"kind": "fixed", "delay": 5}})


def test_a_misspelt_schedule_key_is_named_with_the_likely_one() -> None:
    with pytest.raises(InvalidScheduleError) as refused:
        define_tsumugi(
            performers={"Ok": Ok}, schedules={"tick": {"binding": "Ok", "crom": "@daily", "payload": 1}}
        )
    message = str(refused.value)
    assert message.startswith(
        "unknown key 'crom' in schedule tick (did you mean 'cron'?); a schedule takes binding, "
    )
    with pytest.raises(InvalidScheduleError, match=r"^overlap must be 'skip' or 'overlap': tick$"):
        # S-2 steps 1-3 keep coming first
        define_tsumugi(performers={"Ok": Ok}, schedules={"tick": {"crom": 1, "overlap": "never"}})


def test_cron_names_and_macros_define_a_schedule() -> None:
    app = define_tsumugi(
        performers={"Ok": Ok},
        schedules={
            "weekdays": {"binding": "Ok", "cron": "0 9 * * MON-FRI", "payload": 1},
            "nightly": {"binding": "Ok", "cron": "@daily", "payload": 2},
        },
    )
    assert {spec.name: spec.cron for spec in app.schedules} == {
        "weekdays": "0 9 * * MON-FRI",
        "nightly": "@daily",
    }
