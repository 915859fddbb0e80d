"""The local queue consumer settles like a Cloudflare Queue consumer (ADR-0053)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.dispatch_queue import DurableQueue
from tsumugi.runtimes.local.queue_consumer import LocalMessage, QueueConsumer


async def _consume_until(consumer: QueueConsumer, done: asyncio.Event) -> None:
    task = asyncio.create_task(consumer.run())
    await asyncio.wait_for(done.wait(), timeout=10)
    await consumer.stop(grace_s=5)
    await task


async def test_retried_messages_come_back_and_are_dropped_after_max_retries(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"jobId": "A#0:a"}])
    attempts: list[int] = []
    done = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        for message in batch:
            attempts.append(message.attempts)
            message.retry()
        if len(attempts) == 3:
            done.set()

    await _consume_until(QueueConsumer(queue, handler, clock, max_retries=2), done)
    assert attempts == [1, 2, 3]  # first delivery plus max_retries redeliveries
    assert queue.depth() == 0  # then dropped


async def test_implicitly_acked_messages_are_deleted(tmp_path: Path, clock: FixedClock, closing: Any) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": n} for n in range(25)])
    seen: list[int] = []
    done = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        seen.extend(message.body["n"] for message in batch)  # returns without ack(): acked implicitly
        if len(seen) == 25:
            done.set()

    await _consume_until(QueueConsumer(queue, handler, clock, batch_size=10), done)
    assert sorted(seen) == list(range(25))
    assert queue.depth() == 0


async def test_stopping_releases_the_messages_of_batches_cut_short(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": 1}, {"n": 2}])
    started = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        batch[0].ack()
        started.set()
        await asyncio.Event().wait()  # never finishes on its own

    consumer = QueueConsumer(queue, handler, clock)
    task = asyncio.create_task(consumer.run())
    await asyncio.wait_for(started.wait(), timeout=10)
    await consumer.stop(grace_s=0)
    await task
    (released,) = queue.lease(10)  # the acked one is gone, the other is visible again at once
    assert (released.body, released.attempts) == ('{"n":2}', 2)
