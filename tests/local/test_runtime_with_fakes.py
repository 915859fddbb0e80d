"""LocalRuntime end to end over recording fakes: env bindings, tick -> queue -> app, restart (ADR-0051)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.errors import StateDirError
from tsumugi.runtimes.local.dispatch_queue import DurableQueue
from tsumugi.runtimes.local.runtime import LocalRuntime

MakeRuntime = Callable[..., LocalRuntime]


async def test_env_has_the_bindings_a_worker_has(make_runtime: MakeRuntime, recording_app: Any) -> None:
    # J-6: JOB_SHARD, TSUMUGI_DB and TSUMUGI_QUEUE are the required bindings
    async with make_runtime(recording_app(), vars={"TSUMUGI_TOKEN": "t0k"}) as runtime:
        env = runtime.env
        assert {"JOB_SHARD", "TSUMUGI_DB", "TSUMUGI_QUEUE", "TSUMUGI_TOKEN"} <= set(env.names())
        assert env.TSUMUGI_TOKEN == env["TSUMUGI_TOKEN"] == "t0k"
        assert env.get("SCHEDULER") is None and "SCHEDULER" not in env


async def test_an_enqueue_reaches_the_app_through_tick_and_queue(
    make_runtime: MakeRuntime, recording_app: Any
) -> None:
    app = recording_app(expected=3)
    async with make_runtime(app) as runtime:
        ids = await runtime.env.JOB_SHARD.get("MAIL#0").enqueue_many([{"payload": n} for n in range(3)])
        await asyncio.wait_for(app.done.wait(), timeout=10)
    assert ids == ["MAIL#0:0", "MAIL#0:1", "MAIL#0:2"]
    assert app.bodies == [{"jobId": "MAIL#0:0"}, {"jobId": "MAIL#0:1"}, {"jobId": "MAIL#0:2"}]
    assert runtime.queue is not None


async def test_messages_in_flight_at_a_crash_are_delivered_after_restart(
    make_runtime: MakeRuntime, recording_app: Any, tmp_path: Path, clock: FixedClock
) -> None:
    state = tmp_path / "state"
    queue = DurableQueue(state / "queue.sqlite3", clock)
    await queue.send_batch([{"jobId": "MAIL#0:lost"}])
    queue.lease(10)  # a consumer took it, then the process was killed before acking
    queue.close()

    app = recording_app(expected=1)
    async with make_runtime(app) as runtime:
        await asyncio.wait_for(app.done.wait(), timeout=10)
        assert app.bodies == [{"jobId": "MAIL#0:lost"}]
    assert DurableQueue(state / "queue.sqlite3", clock).depth() == 0  # acked, so gone
    assert runtime.env is not None


async def test_every_shard_on_disk_ticks_once_at_start(
    make_runtime: MakeRuntime, recording_app: Any, wiring: Any
) -> None:
    # ADR-0052: work committed just before a kill, without its alarm, is picked up at restart
    async with make_runtime(recording_app()) as runtime:
        await runtime.env.JOB_SHARD.get("MAIL#0").slow_call("first life")
    async with make_runtime(recording_app()) as runtime:
        await runtime.alarms.fire_due()
        assert wiring.coordinators["MAIL#0"].ticks >= 1


async def test_an_unwritable_state_dir_is_a_clear_error(recording_app: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    runtime = LocalRuntime(recording_app(), blocker / "state")
    with pytest.raises(StateDirError, match="not writable"):
        await runtime.start()


async def test_a_handler_that_raises_gets_its_unacked_messages_again(
    make_runtime: MakeRuntime, recording_app: Any
) -> None:
    class FlakyApp:
        def __init__(self) -> None:
            self.deliveries: list[tuple[Any, int]] = []
            self.done = asyncio.Event()

        async def queue(self, batch: Any, env: Any, ctx: Any = None) -> None:
            for message in batch:
                self.deliveries.append((message.body, message.attempts))
            if len(self.deliveries) == 1:
                raise RuntimeError("first delivery fails")
            self.done.set()

        async def enqueue(self, env: Any, **kwargs: Any) -> str:
            return "unused"

    app = FlakyApp()
    async with make_runtime(app) as runtime:
        await runtime.queue.send_batch([{"jobId": "MAIL#0:x"}])
        await asyncio.wait_for(app.done.wait(), timeout=10)
    assert app.deliveries == [({"jobId": "MAIL#0:x"}, 1), ({"jobId": "MAIL#0:x"}, 2)]


async def test_a_further_coordinator_kind_gets_its_own_namespace_and_files(
    make_runtime: MakeRuntime, recording_app: Any, tmp_path: Path
) -> None:
    # ADR-0050: env.RUN (flows) is served like JOB_SHARD: serialised, one file per coordinator
    async with make_runtime(recording_app()) as runtime:
        run = runtime.env.RUN.get("daily:abc")
        assert await run.slow_call("x") == "x"
    assert (tmp_path / "state" / "runs" / "daily%3Aabc.sqlite3").is_file()
