"""Failure and settlement notices through ``define_tsumugi`` (J-180, J-180a, J-180b, J-42, J-204)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.errors import ConfigurationError

from .conftest import PERFORMERS, START, TRACEPARENT, Stack

FAILURE_FIELDS = {
    "jobId",
    "binding",
    "state",
    "attempts",
    "maxAttempts",
    "error",
    "runId",
    "nodeId",
    "failedAt",
}
SETTLED_FIELDS = {
    "jobId",
    "binding",
    "state",
    "attempts",
    "maxAttempts",
    "error",
    "result",
    "runId",
    "nodeId",
    "settledAt",
}


def notices(messages: list[dict[str, Any]], binding: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["binding"] == binding]


async def test_a_failed_job_sends_exactly_the_failure_notice_fields() -> None:
    # J-180: one notice job at the destination binding, FailureNotice fields and nothing else
    stack = Stack(on_failure="ALERT")
    job_id = await stack.enqueue(max_attempts=2, backoff={"kind": "fixed", "delay_ms": 1_000})
    [first] = await stack.tick()
    await stack.report(first, {"ok": False, "error": "one"})
    assert notices(await stack.tick(), "ALERT") == []  # a retryable failure is not notified
    [second] = await stack.tick_at(START + 1_000)
    await stack.report(second, {"ok": False, "error": "two"})
    [notice] = notices(await stack.tick(), "ALERT")
    assert notice["jobId"].startswith("ALERT#0:")  # an ordinary job of the destination (J-180)
    assert notice["payload"] == {
        "jobId": job_id,
        "binding": "MAIL",
        "state": "FAILED",
        "attempts": 2,
        "maxAttempts": 2,
        "error": "two",
        "runId": None,
        "nodeId": None,
        "failedAt": START + 1_000,
    }


async def test_a_stalled_job_is_notified_as_stalled() -> None:
    # J-180: STALLED too (an at-most-once job whose attempt never reported)
    stack = Stack(on_failure="ALERT", bindings={"MAIL": {"policy": {"reaper_grace_ms": 0}}})
    job_id = await stack.enqueue(guarantee="at-most-once", timeout_ms=1_000)
    assert len(await stack.tick()) == 1
    [notice] = notices(await stack.tick_at(START + 1_000), "ALERT")
    assert set(notice["payload"]) == FAILURE_FIELDS
    assert notice["payload"]["jobId"] == job_id and notice["payload"]["state"] == "STALLED"
    assert notice["payload"]["failedAt"] == START + 1_000


async def test_settled_notices_only_for_the_listed_states() -> None:
    # J-180a: CANCELLED listed, COMPLETED not; result null unless COMPLETED, error null unless failed
    stack = Stack(on_settled={"binding": "AUDIT", "states": ["CANCELLED"]})
    done = await stack.enqueue(payload="done")
    cancelled = await stack.enqueue(delay_ms=60_000)
    [message] = await stack.tick()
    await stack.report(message, {"ok": True, "result": {"n": 1}})
    assert await stack.shard_of(cancelled).cancel(cancelled) == {"ok": True}
    [notice] = notices(await stack.tick(), "AUDIT")
    assert notice["payload"] == {
        "jobId": cancelled,
        "binding": "MAIL",
        "state": "CANCELLED",
        "attempts": 0,
        "maxAttempts": 3,
        "error": None,
        "result": None,
        "runId": None,
        "nodeId": None,
        "settledAt": START,
    }
    assert done != cancelled


async def test_a_completed_notice_carries_the_result() -> None:
    # J-180a
    stack = Stack(on_settled={"binding": "AUDIT", "states": ["COMPLETED"]})
    job_id = await stack.enqueue()
    [message] = await stack.tick()
    await stack.report(message, {"ok": True, "result": [1, "two"]})
    [notice] = notices(await stack.tick(), "AUDIT")
    assert set(notice["payload"]) == SETTLED_FIELDS
    assert notice["payload"]["jobId"] == job_id
    assert (notice["payload"]["result"], notice["payload"]["error"]) == ([1, "two"], None)


async def test_both_destinations_get_a_failed_job_and_destinations_are_not_notified() -> None:
    # J-180a: FAILED in states -> notified to both; J-180: the on_failure binding's own failures are
    # not notified, J-180a: nor are jobs of AUDIT or ALERT settled to AUDIT (AUDIT's failure still
    # reaches ALERT: only the destination's own jobs are exempt from each option)
    stack = Stack(on_failure="ALERT", on_settled={"binding": "AUDIT", "states": ["FAILED", "COMPLETED"]})
    mail = await stack.enqueue(max_attempts=1)
    await stack.enqueue(binding="ALERT", max_attempts=1)
    audit = await stack.enqueue(binding="AUDIT", max_attempts=1)
    for message in await stack.tick():
        await stack.report(message, {"ok": False, "error": "x"})
    sent = await stack.tick()
    assert sorted(m["payload"]["jobId"] for m in notices(sent, "ALERT")) == sorted([mail, audit])
    assert [m["payload"]["jobId"] for m in notices(sent, "AUDIT")] == [mail]
    # the notice jobs themselves complete without producing notices of their own
    for message in sent:
        await stack.report(message, {"ok": True})
    assert await stack.tick() == []


async def test_on_enqueue_is_not_applied_to_notice_jobs() -> None:
    # J-42: defaults fill unset options of user enqueues only
    seen: list[dict[str, Any]] = []

    def defaults(item: dict[str, Any]) -> dict[str, Any]:
        seen.append(item)
        return {"priority": 7, "max_attempts": 1, "timeout_ms": 5}

    stack = Stack(on_failure="ALERT", on_enqueue=defaults)
    job_id = await stack.enqueue(timeout_ms=9_000)
    [message] = await stack.tick()
    assert (message["timeoutMs"], stack.snapshot(job_id)["priority"]) == (
        9_000,
        7,
    )  # caller wins, rest filled
    await stack.report(message, {"ok": False, "error": "x"})
    [notice] = notices(await stack.tick(), "ALERT")
    assert notice["timeoutMs"] == 60_000
    snap = stack.snapshot(notice["jobId"])
    assert (snap["priority"], snap["max_attempts"]) == (0, 3)
    assert len(seen) == 1


async def test_a_notice_carries_the_traceparent_of_the_job_it_reports() -> None:
    # issue item 8: traceparent through enqueue, dispatch, the attempt and its notices
    stack = Stack(on_failure="ALERT")
    await stack.enqueue(max_attempts=1, traceparent=TRACEPARENT)
    [message] = await stack.tick()
    assert message["traceparent"] == TRACEPARENT
    await stack.report(message, {"ok": False, "error": "x"})
    [notice] = notices(await stack.tick(), "ALERT")
    assert notice["traceparent"] == TRACEPARENT


@pytest.mark.parametrize(
    "on_settled",
    [
        {"binding": "AUDIT", "states": []},
        {"binding": "AUDIT", "states": ["DONE"]},
        {"binding": "AUDIT", "states": ["COMPLETED", "RUNNING"]},
        {"binding": "AUDIT"},
        {"binding": "NOWHERE", "states": ["FAILED"]},
    ],
)
def test_an_empty_or_invalid_on_settled_raises_in_define_tsumugi(on_settled: dict[str, Any]) -> None:
    # J-180a, J-204
    with pytest.raises(ConfigurationError):
        define_tsumugi(performers=PERFORMERS, on_settled=on_settled)


def test_an_unknown_on_failure_binding_raises_in_define_tsumugi() -> None:
    # J-204
    with pytest.raises(ConfigurationError, match="unknown binding: NOWHERE"):
        define_tsumugi(performers=PERFORMERS, on_failure="NOWHERE")
