"""Each attempt of a batch runs as a task of its own, however it is started (J-117, ADR-0175).

On Python 3.12 and later the consumer starts each attempt's task eagerly: its first step runs at once.
What a performer sees must not depend on that: the task current while it runs, the context it writes,
and the rest of the batch when it ends in a cancellation.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.execution import PerformersResolver, handle_batch
from tsumugi.performer import JobContext, Performer

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="unset")


async def run(harness: Any, *messages: Any, performer: type[Performer]) -> None:
    resolver = PerformersResolver({"MAIL": performer})
    await handle_batch(messages, harness.env, resolver=resolver, clock=FixedClock(1_000))


async def test_a_performer_keeps_its_task_across_a_wait(harness: Any) -> None:
    same: list[bool] = []

    class Waits(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            before = asyncio.current_task()
            await asyncio.sleep(0)
            same.append(asyncio.current_task() is before and before is not None)
            return "done"

    await run(harness, harness.message("a"), harness.message("b"), performer=Waits)
    assert same == [True, True]
    assert [outcome["result"] for _, outcome in harness.shard().reports] == ["done", "done"]


async def test_asyncio_timeout_and_task_groups_work_inside_a_performer(harness: Any) -> None:
    class Structured(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> list[int]:
            try:
                async with asyncio.timeout(0):  # holds the task current on entry, which it cancels
                    await asyncio.Event().wait()  # never set: only the timeout ends it
            except TimeoutError:
                pass  # this performer's own timeout: only its own wait is cut short
            async with asyncio.TaskGroup() as group:
                parts = [group.create_task(asyncio.sleep(0, n)) for n in (1, 2)]
            return [part.result() for part in parts]

    await run(harness, harness.message("a"), harness.message("b"), performer=Structured)
    assert [outcome["result"] for _, outcome in harness.shard().reports] == [[1, 2], [1, 2]]


async def test_a_context_variable_is_the_attempts_own(harness: Any) -> None:
    seen: list[tuple[str, str, str]] = []

    class Binds(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> None:
            found = REQUEST.get()
            REQUEST.set(ctx.job_id)  # set and never reset, as a logging library's bind does
            if payload == "waits":
                await asyncio.sleep(0)
            seen.append((ctx.job_id, found, REQUEST.get()))

    await run(
        harness,
        harness.message("a"),
        harness.message("b", payload="waits"),
        harness.message("c"),
        performer=Binds,
    )
    assert sorted(seen) == [
        ("MAIL#0:a", "unset", "MAIL#0:a"),
        ("MAIL#0:b", "unset", "MAIL#0:b"),  # kept across its wait
        ("MAIL#0:c", "unset", "MAIL#0:c"),  # nothing left by the attempts before it
    ]
    assert REQUEST.get() == "unset"


async def test_an_attempt_that_ends_cancelled_leaves_the_rest_of_its_batch_running(harness: Any) -> None:
    class Cancels(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            if payload == "cancel":
                raise asyncio.CancelledError  # before it ever waits
            await asyncio.sleep(0)
            return "done"

    await run(
        harness,
        harness.message("a", payload="cancel"),
        harness.message("b"),
        performer=Cancels,
    )
    # The cancelled attempt reports nothing (the reaper recovers its job); the other one finishes.
    assert harness.shard().reports == [("MAIL#0:b", {"ok": True, "result": "done", "attempt": 1})]


async def test_a_task_factory_set_on_the_loop_makes_every_attempts_task(harness: Any) -> None:
    made: list[asyncio.Task[Any]] = []
    ran_in: list[asyncio.Task[Any] | None] = []
    loop = asyncio.get_running_loop()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        made.append(task)
        return task

    class Quick(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> str:
            ran_in.append(asyncio.current_task())
            return "done"

    loop.set_task_factory(factory)
    try:
        await run(harness, harness.message("a"), harness.message("b"), performer=Quick)
    finally:
        loop.set_task_factory(None)
    # Instrumentation on the loop sees each attempt's task, however the consumer starts them.
    assert len(ran_in) == 2 and all(task in made for task in ran_in)
    assert len(harness.shard().reports) == 2
