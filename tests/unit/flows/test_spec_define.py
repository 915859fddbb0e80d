"""Flows and schedules checked by ``define_tsumugi`` (F-6, F-16, F-17, F-81, S-1..S-5, S-7).

Only the public API: ``tsumugi.define_tsumugi``, ``tsumugi.create_flow`` and the exported errors.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from tsumugi import (
    BindingConfig,
    FixedBackoff,
    InvalidFlowError,
    InvalidRunIdError,
    InvalidScheduleError,
    Performer,
    RunSettings,
    create_flow,
    define_tsumugi,
)


class Step(Performer):
    pass


class Locked(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"concurrency_key"})


class Unique(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"unique_key"})


PERFORMERS = {"Step": Step, "Locked": Locked, "Unique": Unique, "Split": Step}
flow = create_flow(PERFORMERS)
ONE = flow(lambda f: f.node("a", "Step", input=lambda: 1))


def define(**options: Any) -> Any:
    return define_tsumugi(performers=PERFORMERS, bindings={"Split": BindingConfig(shards=4)}, **options)


@pytest.mark.parametrize("name", ["bad name", "a:b", "", "ä"])
def test_flow_names_are_checked(name: str) -> None:
    # F-6: InvalidRunIdError with the quoted name
    with pytest.raises(InvalidRunIdError) as info:
        define(flows={name: ONE})
    assert str(info.value) == f'invalid flow name: "{name}" (alphanumeric, hyphen and underscore only)'


def test_unregistered_subflow_target() -> None:
    # F-17: `<flow>.<node id>`
    child = flow(lambda f: f.node("x", "Step", input=lambda: 1))
    parent = flow(lambda f: f.subflow("report", child, input=lambda: 1))
    with pytest.raises(InvalidFlowError) as info:
        define(flows={"PIPELINE": parent})
    assert str(info.value) == "subflow target is not registered: PIPELINE.report"
    assert set(define(flows={"PIPELINE": parent, "REPORTING": child}).flows) == {"PIPELINE", "REPORTING"}


def test_same_flow_registered_twice_is_accepted() -> None:
    # F-16: identity lookup, first key wins; registering twice is not an error
    parent = flow(lambda f: f.subflow("s", ONE, input=lambda: 1))
    assert set(define(flows={"P": parent, "X": ONE, "Y": ONE}).flows) == {"P", "X", "Y"}


def test_run_settings_defaults() -> None:
    # F-81
    assert define().runs == RunSettings(
        max_nodes=10_000, max_depth=3, sweep_after_ms=300_000, failed_retention_ms=604_800_000
    )
    assert define(runs=RunSettings(max_nodes=5, max_depth=1)).runs.max_nodes == 5


def schedule_error(spec: dict[str, Any], name: str = "s") -> str:
    with pytest.raises(InvalidScheduleError) as info:
        define(flows={"REPORT": ONE}, schedules={name: spec})
    return str(info.value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # S-2 step 2 comes before everything after it, even with a null value
        ({"unique_key": None, "overlap": "wait"}, "unique_key is not allowed in a schedule: s"),
        # step 3 before step 4
        ({"overlap": "wait"}, "overlap must be 'skip' or 'overlap': s"),
        # step 4 before step 7
        ({"binding": "Step", "payload": 1}, "exactly one of every_ms and cron is required: s"),
        # step 5
        (
            {"every_ms": 1000.5, "binding": "Step", "payload": 1},
            "every_ms must be an integer of at least 1000: s",
        ),
        (
            {"every_ms": "5000", "binding": "Step", "payload": 1},
            "every_ms must be an integer of at least 1000: s",
        ),
        ({"every_ms": 0, "binding": "Step", "payload": 1}, "every_ms must be an integer of at least 1000: s"),
        # step 6 before step 7
        ({"cron": "0 0 30 2 *"}, "invalid cron in schedule s: no occurrence within 1830 days"),
        ({"cron": "61 * * * *"}, "invalid cron in schedule s: minute value out of range (0-59): 61"),
        ({"cron": "0 3 * * MOO"}, "invalid cron in schedule s: invalid day of week value: MOO"),  # ADR-0146
        (
            {"cron": "0 3 * *"},
            "invalid cron in schedule s: expected 5 fields (minute hour day month weekday): 0 3 * *",
        ),
        # step 7
        ({"cron": "0 3 * * *"}, "exactly one of binding and flow is required: s"),
        (
            {"cron": "0 3 * * *", "binding": "Step", "flow": "REPORT"},
            "exactly one of binding and flow is required: s",
        ),
        # step 8, in order
        ({"every_ms": 1000, "binding": "Nope"}, "binding is not registered: s -> Nope"),
        ({"every_ms": 1000, "binding": "Split"}, "payload is required: s"),
        (
            {"every_ms": 1000, "binding": "Split", "payload": 1},
            "partition_key is required for a sharded binding: s -> Split",
        ),
        ({"every_ms": 1000, "flow": "NOPE"}, "flow is not registered: s -> NOPE"),
        ({"every_ms": 1000, "flow": "REPORT"}, "input is required: s"),
    ],
)
def test_schedule_validation_order_through_define(spec: dict[str, Any], message: str) -> None:
    # S-1, S-2: errors raise InvalidScheduleError from define_tsumugi
    assert schedule_error(spec) == message


def test_schedule_name_length() -> None:
    # S-2 step 1: up to 64 chars
    ok = define(schedules={"x" * 64: {"binding": "Step", "payload": 1, "every_ms": 1000}})
    assert [d.name for d in ok.schedules] == ["x" * 64]
    assert schedule_error({}, name="x" * 65).startswith('invalid schedule name: "xxx')


def test_payload_and_input_may_be_none_but_must_be_present() -> None:
    # S-2 step 8: the key must be present; any value, None included
    defs = define(
        flows={"REPORT": ONE},
        schedules={
            "j": {"binding": "Step", "payload": None, "every_ms": 1000},
            "f": {"flow": "REPORT", "input": None, "cron": "0 3 * * *"},
        },
    ).schedules
    assert [(d.name, d.kind, d.target) for d in defs] == [("f", "flow", "REPORT"), ("j", "job", "Step")]


def test_performer_requirements_on_job_schedules() -> None:
    # S-3: a required concurrency_key must be a static string; unique_key performers cannot be scheduled
    assert "concurrency_key" in schedule_error({"every_ms": 1000, "binding": "Locked", "payload": 1})
    assert "unique_key" in schedule_error({"every_ms": 1000, "binding": "Unique", "payload": 1})
    ok = define(
        schedules={"s": {"every_ms": 1000, "binding": "Locked", "payload": 1, "concurrency_key": "k"}}
    )
    assert ok.schedules[0].target == "Locked"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"max_attempts": 0},
            "invalid job option in schedule s: max_attempts must be an integer >= 1, got 0",
        ),
        ({"priority": "x"}, "invalid job option in schedule s: priority must be a finite number, got 'x'"),
        ({"partition_key": 5}, "invalid job option in schedule s: partition_key must be a string, got 5"),
        ({"concurrency_key": 7}, "invalid job option in schedule s: concurrency_key must be a string, got 7"),
    ],
)
def test_job_schedule_options_are_checked_at_definition(options: dict[str, Any], message: str) -> None:
    # S-1: nothing is deferred to firing time; S-3 lists the allowed job options
    assert schedule_error({"every_ms": 1000, "binding": "Step", "payload": 1, **options}) == message


def test_flow_schedule_deadline_is_checked_at_definition() -> None:
    # S-1, S-3, F-72: a flow schedule's deadline_ms is a positive integer
    for bad in (0, -1, 1.5, True, "10"):
        spec = {"every_ms": 1000, "flow": "REPORT", "input": {}, "deadline_ms": bad}
        assert schedule_error(spec) == "deadline_ms must be a positive integer: s"
    ok = define(
        flows={"REPORT": ONE},
        schedules={"s": {"every_ms": 1000, "flow": "REPORT", "input": {}, "deadline_ms": 9000}},
    )
    assert ok.schedules[0].kind == "flow"


def test_job_schedule_backoff_is_kept_in_a_form_the_shard_reads() -> None:
    # S-3, J-101: a backoff mapping is read once so its snake_case fields are not lost
    defs = define(
        schedules={
            "s": {
                "every_ms": 1000,
                "binding": "Step",
                "payload": 1,
                "backoff": {"kind": "fixed", "delay_ms": 50},
            }
        }
    ).schedules
    assert defs[0].definition["backoff"] == FixedBackoff(delay_ms=50)


def test_normalized_form_and_defaults() -> None:
    # S-5: sorted by name, overlap defaults to "skip", cron text trimmed
    defs = define(
        flows={"REPORT": ONE},
        schedules={
            "zeta": {"binding": "Step", "payload": {}, "every_ms": 5 * 60_000},
            "alpha": {
                "flow": "REPORT",
                "input": lambda ctx: {"until": ctx.scheduled_at},
                "cron": " 0 3 * * * ",
            },
        },
    ).schedules
    assert [d.fingerprint_entry() for d in defs] == [
        {
            "name": "alpha",
            "kind": "flow",
            "target": "REPORT",
            "every_ms": None,
            "cron": "0 3 * * *",
            "overlap": "skip",
        },
        {
            "name": "zeta",
            "kind": "job",
            "target": "Step",
            "every_ms": 300_000,
            "cron": None,
            "overlap": "skip",
        },
    ]
