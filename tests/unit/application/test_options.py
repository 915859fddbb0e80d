"""Enqueue option normalisation and validation (J-26..J-29, J-40..J-42, J-70)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsumugi.core.config import FixedBackoff
from tsumugi.core.config_checks import camel_case
from tsumugi.core.input_bounds import MAX_DURATION_MS, MAX_SAFE_INTEGER
from tsumugi.core.options import apply_defaults, check_required_keys, input_from, to_wire_input
from tsumugi.errors import EnqueueError, RequiredKeyError

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def wire(**options: Any) -> dict[str, Any]:
    return to_wire_input(input_from({"binding": "MAIL", "payload": {"a": 1}, **options}))


def test_snake_case_options_become_camel_case_wire_keys() -> None:
    # J-1: wire keys keep the original spelling
    assert wire(
        priority=2.5,
        max_attempts=5,
        timeout_ms=1000,
        delay_ms=10,
        guarantee="at-most-once",
        concurrency_key="c",
        unique_key="u",
        unique_for_ms=100,
        partition_key="p",
        traceparent=TRACEPARENT,
        expires_in_ms=500,
        backoff=FixedBackoff(10),
    ) == {
        "binding": "MAIL",
        "payload": {"a": 1},
        "priority": 2.5,
        "maxAttempts": 5,
        "timeoutMs": 1000,
        "delayMs": 10,
        "guarantee": "at-most-once",
        "concurrencyKey": "c",
        "uniqueKey": "u",
        "uniqueForMs": 100,
        "partitionKey": "p",
        "traceparent": TRACEPARENT,
        "expiresInMs": 500,
        "backoff": {"kind": "fixed", "delayMs": 10, "jitter": False},
    }


def test_camel_case_spellings_are_accepted_and_none_means_absent() -> None:
    options = input_from({"binding": "MAIL", "payload": None, "maxAttempts": 2, "runAt": None})
    # J-28: None is treated as absent (payload None is a value)
    assert options == {"binding": "MAIL", "payload": None, "max_attempts": 2}


def test_unknown_or_duplicated_options_are_rejected() -> None:
    with pytest.raises(EnqueueError, match="unknown enqueue option: 'retries'"):
        input_from({"binding": "MAIL", "payload": 1, "retries": 3})
    with pytest.raises(EnqueueError, match="given twice"):
        input_from({"binding": "MAIL", "payload": 1, "max_attempts": 3, "maxAttempts": 3})


def test_binding_and_payload_are_required() -> None:
    with pytest.raises(EnqueueError, match="payload is required"):
        to_wire_input({"binding": "MAIL"})
    with pytest.raises(EnqueueError, match="binding is required"):
        to_wire_input({"payload": 1})


@pytest.mark.parametrize(
    "options,message",
    [
        ({"run_at": 1, "delay_ms": 2}, "run_at and delay_ms are mutually exclusive"),  # J-26, README 3
        (
            {"expires_at": 1, "expires_in_ms": 2},
            "expires_at and expires_in_ms are mutually exclusive",
        ),  # J-41
        ({"max_attempts": 0}, "max_attempts must be an integer >= 1"),
        ({"max_attempts": 1.5}, "max_attempts must be an integer >= 1"),
        ({"max_attempts": True}, "max_attempts must be an integer >= 1"),
        ({"timeout_ms": -1}, "timeout_ms must be a number >= 0"),
        ({"delay_ms": -1}, "delay_ms must be a number >= 0"),
        ({"priority": float("nan")}, "priority must be a finite number"),
        ({"priority": float("inf")}, "priority must be a finite number"),
        ({"guarantee": "exactly-once"}, "guarantee must be"),
        ({"backoff": {"kind": "linear"}}, "backoff.kind must be"),
        ({"expires_in_ms": 0}, "expires_in_ms must be positive"),
        ({"concurrency_key": 5}, "concurrency_key must be a string"),
        ({"run_at": "tomorrow"}, "run_at must be a finite number"),
    ],
)
def test_invalid_options_raise_value_errors(options: dict[str, Any], message: str) -> None:
    # J-29: every rejection is an EnqueueError, which is a ValueError
    with pytest.raises(ValueError, match=message) as caught:
        wire(**options)
    assert isinstance(caught.value, EnqueueError)


def test_integral_float_max_attempts_is_an_integer() -> None:
    assert wire(max_attempts=3.0)["maxAttempts"] == 3


def test_payload_must_be_json_serializable() -> None:
    # J-27
    with pytest.raises(EnqueueError, match="payload must be JSON-serializable"):
        wire(payload={"when": object()})


def test_invalid_traceparent_has_the_exact_message() -> None:
    # J-40
    with pytest.raises(EnqueueError) as caught:
        wire(traceparent="00-00000000000000000000000000000000-b7ad6b7169203331-01")
    assert str(caught.value) == "traceparent must be a valid W3C Trace Context version 00 value"


def test_on_enqueue_defaults_fill_only_unset_options() -> None:
    seen: list[dict[str, Any]] = []

    def defaults(input: dict[str, Any]) -> dict[str, Any]:
        seen.append(input)
        return {"timeout_ms": 300_000, "priority": 9, "unique_key": "never", "partition_key": "never"}

    merged = apply_defaults(input_from({"binding": "SlowJob", "payload": 1, "priority": 1}), defaults)
    # J-42: caller wins; unique_key / partition_key are never defaulted
    assert merged == {"binding": "SlowJob", "payload": 1, "priority": 1, "timeout_ms": 300_000}
    assert seen == [{"binding": "SlowJob", "payload": 1, "priority": 1}]


def test_on_enqueue_exclusive_pairs_yield_to_the_caller() -> None:
    def defaults(input: dict[str, Any]) -> dict[str, Any]:
        return {"delay_ms": 1000, "run_at": 5, "expires_in_ms": 10}

    merged = apply_defaults({"binding": "MAIL", "payload": 1, "run_at": 7, "expires_at": 3}, defaults)
    # J-42 [INF]: a caller-set member shadows the defaults for both members of its pair
    assert merged == {"binding": "MAIL", "payload": 1, "run_at": 7, "expires_at": 3}
    assert to_wire_input(merged)["runAt"] == 7


def test_on_enqueue_may_return_none_or_camel_case() -> None:
    assert apply_defaults({"binding": "M", "payload": 1}, lambda _: None) == {"binding": "M", "payload": 1}
    merged = apply_defaults({"binding": "M", "payload": 1}, lambda _: {"maxAttempts": 9})
    assert merged["max_attempts"] == 9


def test_required_keys_raise_a_type_error_naming_the_key() -> None:
    # J-70: "<binding> requires <key>"
    with pytest.raises(RequiredKeyError) as caught:
        check_required_keys("CHARGE", {"unique_key": "u"}, frozenset({"concurrency_key", "unique_key"}))
    assert isinstance(caught.value, TypeError)
    assert str(caught.value) == "CHARGE requires concurrency_key"
    check_required_keys("CHARGE", {"concurrency_key": "c"}, frozenset({"concurrency_key"}))


# Within ADR-0133's bounds, where values pass unchanged (beyond them they are clamped: tests/api).
VALID_OPTIONS = st.fixed_dictionaries(
    {"binding": st.just("MAIL"), "payload": st.recursive(st.none() | st.integers() | st.text(), st.lists)},
    optional={
        "priority": st.floats(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
        "max_attempts": st.integers(min_value=1, max_value=100),
        "timeout_ms": st.integers(min_value=0, max_value=MAX_DURATION_MS),
        "delay_ms": st.integers(min_value=0, max_value=MAX_DURATION_MS),
        "guarantee": st.sampled_from(["at-least-once", "at-most-once"]),
        "concurrency_key": st.text(),
        "unique_key": st.text(),
        "unique_for_ms": st.integers(min_value=-MAX_DURATION_MS, max_value=MAX_DURATION_MS),
        "expires_in_ms": st.integers(min_value=1, max_value=MAX_DURATION_MS),
    },
)


@given(VALID_OPTIONS)
def test_snake_and_camel_spellings_give_the_same_wire(options: dict[str, Any]) -> None:
    # J-1: the wire is camelCase whatever the caller's spelling; valid values pass through unchanged
    snake = to_wire_input(input_from(options))
    camel = to_wire_input(input_from({camel_case(k): v for k, v in options.items()}))
    assert snake == camel
    assert snake == {camel_case(k): v for k, v in options.items()}
