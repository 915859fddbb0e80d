"""Typed performers in the consumer: payloads decoded, results dumped, spawn defaults, the timeout
opt-in (issue 14 items 1, 2 and 6; ADR-0140, ADR-0141)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from typing import Any, ClassVar

import pydantic
import pytest

from tsumugi.clock import FixedClock
from tsumugi.execution import PerformersResolver, handle_batch
from tsumugi.performer import JobContext, Performer

LOOP_TURNS = 20  # enough turns of the event loop for a woken timer, its report and a cancellation


async def let_loop_run() -> None:
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)


@dataclasses.dataclass
class MailIn:
    to: str
    retries: int = 0


class Receipt(pydantic.BaseModel):
    to: str
    at: datetime.datetime


class Received(Performer[MailIn, Receipt]):
    seen: ClassVar[list[Any]] = []

    async def perform(self, payload: MailIn, ctx: JobContext) -> Receipt:
        type(self).seen.append(payload)
        return Receipt(to=payload.to, at=datetime.datetime(2025, 1, 2, 3, 4, 5))


async def run(harness: Any, message: Any, performer: type, clock: Any = None, **kwargs: Any) -> None:
    await handle_batch(
        [message],
        harness.env,
        resolver=PerformersResolver({"MAIL": performer}),
        clock=clock or FixedClock(0),
        **kwargs,
    )


async def test_the_payload_arrives_as_its_type_and_a_model_result_is_stored_as_json(harness: Any) -> None:
    Received.seen.clear()
    await run(harness, harness.message(payload={"to": "a@example.com"}), Received)
    assert Received.seen == [MailIn("a@example.com")]
    # issue 14: a returned model is its JSON, never a silent null (J-71 stores this text)
    assert harness.shard().reports[0][1] == {
        "ok": True,
        "result": {"to": "a@example.com", "at": "2025-01-02T03:04:05"},
        "attempt": 1,
    }


async def test_a_payload_that_does_not_match_fails_the_attempt_with_its_fields(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await run(harness, harness.message(payload={"to": 5}), Received)
    ((_, outcome),) = harness.shard().reports
    # an ordinary failure, retried per max_attempts like a missing performer (J-61); no stack trace
    assert outcome == {
        "ok": False,
        "error": "InvalidPayloadError: MAIL: the payload does not match MailIn: to: expected str, got int",
        "attempt": 1,
    }
    assert "tsumugi: perform failed (MAIL#0:job1)" in caplog.text


@pytest.mark.parametrize(
    ("returned", "problem"),
    [
        (datetime.date(2025, 1, 1), "result: date is not JSON"),
        ({"tags": {"a"}}, "tags: set is not JSON"),
        ([b"raw"], "result[0]: bytes is not JSON"),
    ],
)
async def test_a_result_that_is_not_json_fails_the_attempt(harness: Any, returned: Any, problem: str) -> None:
    class Returns(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> Any:
            return returned

    await run(harness, harness.message(), Returns)
    ((_, outcome),) = harness.shard().reports
    assert outcome["ok"] is False
    assert outcome["error"] == (
        f"ResultNotJsonError: MAIL: the result is not JSON: {problem} "
        "(return JSON values, a dataclass or a pydantic model)"
    )


async def test_a_dataclass_result_of_an_untyped_performer_is_stored_as_json(harness: Any) -> None:
    class Untyped(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> Any:
            return MailIn(payload["to"], retries=2)

    await run(harness, harness.message(), Untyped)
    assert harness.shard().reports[0][1]["result"] == {"to": "a@example.com", "retries": 2}


async def test_spawned_children_get_their_binding_s_class_defaults(harness: Any) -> None:
    class Spawner(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            ctx.spawn("a", "CHILD", {}, {"max_attempts": 2})
            ctx.spawn("b", "OTHER", {})

    defaults = {"CHILD": {"maxAttempts": 7, "timeoutMs": 5_000}}
    await run(harness, harness.message(), Spawner, spawn_defaults=defaults)
    # ADR-0141: the spawn's own option wins; a binding without defaults sends none
    assert harness.shard().reports[0][1]["spawns"] == [
        {"id": "a", "binding": "CHILD", "payload": {}, "options": {"maxAttempts": 2, "timeoutMs": 5_000}},
        {"id": "b", "binding": "OTHER", "payload": {}},
    ]


def hanging(cancels: bool, log: list[str], release: asyncio.Event) -> type[Performer]:
    class Hanging(Performer):
        cancel_on_timeout = cancels

        async def perform(self, payload: Any, ctx: JobContext) -> str:
            log.append("started")
            try:
                await release.wait()
            except asyncio.CancelledError:
                log.append("cancelled")
                raise
            finally:
                log.append("cleaned up")
            log.append("finished")
            return "late"

    return Hanging


async def test_by_default_a_timed_out_coroutine_runs_on(harness: Any) -> None:
    clock, log, release = FixedClock(0), [], asyncio.Event()
    batch = asyncio.ensure_future(
        run(harness, harness.message(timeoutMs=20), hanging(False, log, release), clock)
    )
    await let_loop_run()
    clock.advance(20)
    await batch
    await let_loop_run()
    # seed page: "The performer is not stopped after the timeout."
    assert log == ["started"]
    release.set()
    await let_loop_run()
    assert log == ["started", "cleaned up", "finished"]
    assert len(harness.shard().reports) == 1  # its late outcome is discarded (J-74)


async def test_cancel_on_timeout_cancels_the_coroutine_at_the_timeout(harness: Any) -> None:
    clock, log, release = FixedClock(0), [], asyncio.Event()
    batch = asyncio.ensure_future(
        run(harness, harness.message(timeoutMs=20), hanging(True, log, release), clock)
    )
    await let_loop_run()
    clock.advance(19)
    await let_loop_run()
    assert log == ["started"]  # not before the timeout
    clock.advance(1)
    await batch
    await let_loop_run()
    # ADR-0141: cancelled at the timeout, its finally blocks run, so a retry cannot overlap it
    assert log == ["started", "cancelled", "cleaned up"]
    ((_, outcome),) = harness.shard().reports
    assert outcome == {
        "ok": False,
        "error": "TsumugiTimeoutError: job timed out (MAIL#0:job1, 20ms)",  # the same error as ever
        "attempt": 1,
    }


async def test_cancel_on_timeout_leaves_an_attempt_that_finishes_in_time_alone(harness: Any) -> None:
    class Quick(Performer):
        cancel_on_timeout = True

        async def perform(self, payload: Any, ctx: JobContext) -> str:
            await asyncio.sleep(0)
            return "done"

    await run(harness, harness.message(timeoutMs=20), Quick)
    assert harness.shard().reports[0][1] == {"ok": True, "result": "done", "attempt": 1}


async def test_cancel_on_timeout_still_stops_with_the_runtime(harness: Any) -> None:
    clock, log, release = FixedClock(0), [], asyncio.Event()
    batch = asyncio.ensure_future(
        run(harness, harness.message(timeoutMs=20), hanging(True, log, release), clock)
    )
    await let_loop_run()
    batch.cancel()  # the runtime shutting down is not a timeout
    with pytest.raises(asyncio.CancelledError):
        await batch
    await let_loop_run()
    assert log == ["started", "cancelled", "cleaned up"]
    assert harness.shard().reports == []
