"""A shard stub that takes reports without a wait (ADR-0167): the batch ends once the shard answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tsumugi.execution import PerformersResolver, handle_batch
from tsumugi.performer import JobContext, Performer

Answer = Callable[[BaseException | None], None]


class Echo(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        return payload


class HandOverShard:
    """A stub whose class defines ``report_later``; it keeps each report and its answer for the test."""

    def __init__(self, events: list[tuple[str, str]]) -> None:
        self.events = events
        self.taken: list[tuple[str, Mapping[str, object], Answer]] = []

    def report_later(self, job_id: str, outcome: Mapping[str, object], answer: Answer) -> bool:
        self.events.append(("report", job_id))
        self.taken.append((job_id, outcome, answer))
        return True

    async def report(self, job_id: str, outcome: Mapping[str, object]) -> None:
        raise AssertionError("a stub that takes reports later is never awaited for one")


class Namespace:
    def __init__(self, shard: HandOverShard) -> None:
        self.shard = shard

    def get(self, name: str) -> HandOverShard:
        return self.shard


class Message:
    def __init__(self, local_id: str, events: list[tuple[str, str]]) -> None:
        self.body = {"jobId": f"MAIL#0:{local_id}", "binding": "MAIL", "attempt": 1, "payload": local_id}
        self.attempts = 1
        self.events = events

    def ack(self) -> None:
        self.events.append(("ack", str(self.body["jobId"])))


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(100):  # loop turns, not time: each lets the batch's tasks step
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the batch never got there")


async def test_the_batch_returns_only_once_every_handed_over_report_is_answered() -> None:
    events: list[tuple[str, str]] = []
    shard = HandOverShard(events)
    messages = [Message("a", events), Message("b", events)]
    batch = asyncio.ensure_future(
        handle_batch(messages, {"JOB_SHARD": Namespace(shard)}, resolver=PerformersResolver({"MAIL": Echo}))
    )
    await _until(lambda: len(shard.taken) == 2)
    # J-118: each message acked before its report
    assert events == [
        ("ack", "MAIL#0:a"),
        ("report", "MAIL#0:a"),
        ("ack", "MAIL#0:b"),
        ("report", "MAIL#0:b"),
    ]
    assert [outcome["result"] for _, outcome, _ in shard.taken] == ["a", "b"]
    shard.taken[0][2](None)
    for _ in range(5):
        await asyncio.sleep(0)
    assert not batch.done()  # b's report is not applied yet
    shard.taken[1][2](None)
    await asyncio.wait_for(batch, 5)


async def test_a_handed_over_report_that_failed_is_logged_and_the_batch_still_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[tuple[str, str]] = []
    shard = HandOverShard(events)
    env = {"JOB_SHARD": Namespace(shard)}
    batch = asyncio.ensure_future(
        handle_batch([Message("a", events)], env, resolver=PerformersResolver({"MAIL": Echo}))
    )
    await _until(lambda: len(shard.taken) == 1)
    shard.taken[0][2](ConnectionError("lost"))
    await asyncio.wait_for(batch, 5)
    # J-118: a lost report is logged, never rethrown
    assert "tsumugi: report failed (MAIL#0:a)" in caplog.text
