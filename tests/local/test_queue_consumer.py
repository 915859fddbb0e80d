"""The local queue consumer settles like a Cloudflare Queue consumer (ADR-0053)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.dispatch_queue import DurableQueue
from tsumugi.runtimes.local.queue_consumer import LocalMessage, QueueConsumer


async def _consume_until(consumer: QueueConsumer, done: asyncio.Event) -> None:
    await _stop_when(consumer, asyncio.create_task(consumer.run()), done)


async def _stop_when(consumer: QueueConsumer, running: asyncio.Task[None], done: asyncio.Event) -> None:
    """Once ``done`` is set, stop the consumer ``running`` runs, giving its batches time to finish."""
    await asyncio.wait_for(done.wait(), timeout=10)
    await consumer.stop(grace_s=5)
    await running


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


# ---------------------------------------------------------------------- sends handed over (ADR-0172)
async def _waiting(consumer: QueueConsumer) -> asyncio.Task[None]:
    """Run the consumer until it found nothing to lease and waits, taking sends as they come."""
    running = asyncio.create_task(consumer.run())
    for _ in range(100):
        if consumer.room() > 0:
            return running
        await asyncio.sleep(0)
    raise AssertionError("the consumer never waited for messages")


async def test_a_message_handed_to_a_waiting_consumer_was_stored_first_and_comes_back_after_a_crash(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    seen: list[tuple[object, int]] = []
    started = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        seen.extend((message.body, message.attempts) for message in batch)
        assert queue.lease(10) == []  # stored leased: nothing else can take it
        started.set()
        await asyncio.Event().wait()  # the process dies before this returns

    consumer = QueueConsumer(queue, handler, clock)
    task = await _waiting(consumer)
    await queue.send_batch([{"n": 1}])
    await asyncio.wait_for(started.wait(), timeout=10)
    assert seen == [({"n": 1}, 1)]

    # What the next process finds on the disk if this one dies now: the message, its delivery counted.
    after_a_crash = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    assert after_a_crash.void_leases() == 1
    (again,) = after_a_crash.lease(10)
    assert (again.body, again.attempts) == ('{"n":1}', 2)
    await consumer.stop(grace_s=0)
    await task


async def test_messages_sent_while_every_slot_is_busy_wait_and_come_oldest_first(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    order: list[object] = []
    gate = asyncio.Event()
    done = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        order.extend(message.body["n"] for message in batch)
        if order == ["a"]:
            await gate.wait()
        if len(order) == 4:
            done.set()

    consumer = QueueConsumer(queue, handler, clock, batch_size=1, max_concurrency=1)
    task = await _waiting(consumer)
    await queue.send_batch([{"n": "a"}])  # handed over: the one slot is busy with it
    await asyncio.sleep(0)
    assert order == ["a"]
    await queue.send_batch([{"n": "b"}, {"n": "c"}])  # no slot free: stored, visible
    gate.set()
    await asyncio.sleep(0)
    await queue.send_batch([{"n": "d"}])  # b and c are older and still waiting: d comes after them
    await _stop_when(consumer, task, done)
    assert order == ["a", "b", "c", "d"]
    assert queue.depth() == 0


async def test_a_send_larger_than_the_free_slots_hands_over_what_fits_and_stores_the_rest(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    batches: list[list[object]] = []
    gate = asyncio.Event()
    done = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        batches.append([message.body["n"] for message in batch])
        await gate.wait()
        if sum(map(len, batches)) == 5:
            done.set()

    consumer = QueueConsumer(queue, handler, clock, batch_size=2, max_concurrency=2)
    task = await _waiting(consumer)
    await queue.send_batch([{"n": n} for n in range(5)])
    await asyncio.sleep(0)
    assert batches == [[0, 1], [2, 3]]  # one batch per free slot, at once
    assert queue.depth() == 5  # every one stored; the fifth waits for a slot
    gate.set()
    await _stop_when(consumer, task, done)
    assert sorted(n for batch in batches for n in batch) == [0, 1, 2, 3, 4]


class _CountingQueue(DurableQueue):
    """The queue file as it is, counting the settlements that reach it."""

    settlements = 0

    def settle(self, acked: Any, retried: Any) -> None:
        self.settlements += 1
        super().settle(acked, retried)


async def test_batches_that_end_together_settle_in_one_transaction(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    # ADR-0177: the batches a shard's report batch answers at once leave the queue in one transaction
    queue = closing(_CountingQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": n} for n in range(30)])
    release = asyncio.Event()
    arrived: list[int] = []
    done = asyncio.Event()

    async def handler(batch: list[LocalMessage]) -> None:
        arrived.extend(message.body["n"] for message in batch)
        await release.wait()  # every batch ends at the same turn, as when one report batch answers all

    consumer = QueueConsumer(queue, handler, clock, batch_size=10)
    running = asyncio.create_task(consumer.run())
    while len(arrived) < 30:
        await asyncio.sleep(0)
    release.set()
    while queue.depth():
        await asyncio.sleep(0)
    assert queue.settlements == 1
    done.set()
    await _stop_when(consumer, running, done)
    reopened = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    assert reopened.depth() == 0
