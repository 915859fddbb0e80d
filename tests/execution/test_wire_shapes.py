"""The consumer's typed wire shapes against the dicts that really cross the queue and the report RPC.

``tsumugi.execution.messages`` describes the dispatch message and the attempt report as typed dicts; these
tests hold the dicts the shard and the consumer build to those shapes, key for key (J-116, J-119, J-76).
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.coordinator.shard_tick import dispatch_message, dispatch_text
from tsumugi.core import wire_format
from tsumugi.errors import PermanentFailure, RetryAfter
from tsumugi.execution.attempt import failure_report, not_found_report
from tsumugi.execution.consumer import success_report
from tsumugi.execution.messages import DispatchMessage, FailureReport, SpawnWire, SuccessReport
from tsumugi.performer import SpawnRequest
from tsumugi.storage.tick_tables import DispatchRow

# What a tick reads of a ready job; the dispatch message is made from it.
_ROW: dict[str, Any] = {
    "id": "MAIL#0:job1",
    "binding": "MAIL",
    "state": "SCHEDULED",
    "priority": 0,
    "attempts": 0,
    "max_attempts": 3,
    "concurrency_key": None,
    "guarantee": "at-most-once",
    "timeout_ms": 30_000,
    "run_after": 1_000,
    "created_at": 1_000,
    "dispatched_at": None,
    "heartbeat_at": None,
    "payload": '{"to":"a@example.com"}',
    "expires_at": None,
    "traceparent": None,
    "cancel_requested_at": None,
    "run_id": None,
    "node_id": None,
    "backoff": "{}",
}


def _keys_fit(shape: Any, value: dict[str, Any]) -> None:
    assert set(value) <= set(shape.__annotations__), (shape.__name__, set(value))
    assert shape.__required_keys__ <= set(value), (shape.__name__, set(value))


def test_the_shards_dispatch_message_has_the_fields_the_consumer_reads() -> None:
    # J-116
    message = dispatch_message(DispatchRow(**_ROW))
    assert set(message) == set(DispatchMessage.__annotations__)
    _keys_fit(DispatchMessage, message)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"guarantee": "at-least-once", "timeout_ms": None, "expires_at": 9_000, "traceparent": "00-ab-cd-01"},
        {"payload": wire_format.dumps({"text": 'quote " backslash \\ tab \t é 😀 \u2028', "n": [1.5, None]})},
        {"payload": wire_format.dumps("\ud800 lone"), "binding": "Mail_2", "attempts": 4},
        {"payload": "null", "traceparent": 'odd "trace" \\ é'},
    ],
)
def test_the_dispatch_message_as_text_reads_back_as_the_message(fields: dict[str, Any]) -> None:
    # J-116: a queue that keeps text gets the same message, written around the stored payload
    job = DispatchRow(**{**_ROW, **fields})
    assert wire_format.loads(dispatch_text(job)) == dispatch_message(job)


def test_a_success_report_is_ok_result_and_the_optional_spawns_and_attempt() -> None:
    # J-119
    _keys_fit(SuccessReport, dict(success_report({"sent": True}, (), None)))
    spawned = SpawnRequest(id="child", binding="SMS", payload={"n": 1}, options={"max_attempts": 2})
    report = success_report(None, (spawned,), 3, {"SMS": {"priority": 5}})
    _keys_fit(SuccessReport, dict(report))
    assert report["spawns"] == [
        {"id": "child", "binding": "SMS", "payload": {"n": 1}, "options": {"priority": 5, "maxAttempts": 2}}
    ]
    _keys_fit(SpawnWire, dict(report["spawns"][0]))


@pytest.mark.parametrize(
    ("error", "retry"),
    [
        (ValueError("boom"), None),
        (PermanentFailure("no"), {"kind": "never"}),
        (RetryAfter("later", at=5_000), {"kind": "at", "at": 5_000}),
        (RetryAfter("later", delay_ms=250), {"kind": "at", "at": 1_250}),
    ],
)
def test_a_failure_report_is_ok_false_an_error_and_the_optional_retry(
    error: BaseException, retry: dict[str, Any] | None
) -> None:
    # J-76
    report = failure_report(error, 2, 1_000)
    _keys_fit(FailureReport, dict(report))
    assert report.get("retry") == retry
    assert report["attempt"] == 2
    _keys_fit(FailureReport, dict(not_found_report("MAIL", None)))
