"""The consumer side of the local dispatch queue: lease batches, hand them to the app, settle them.

Settling follows a Cloudflare Queue consumer: a message is acked by ``ack()`` or implicitly when the
handler returns; ``retry()`` (or a handler that raises) makes it visible again; a message delivered
more than ``max_retries + 1`` times is dropped (ADR-0053).

A consumer with nothing to lease waits as the queue's ``Handoff``: sends hand their messages over while
it has a batch slot free and nothing older is visible (ADR-0172).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Final, cast

from tsumugi.clock import Clock
from tsumugi.core.json_types import JsonValue
from tsumugi.runtimes.local.dispatch_queue import DurableQueue, Handoff, LeasedMessage

log = logging.getLogger("tsumugi.local")

# ADR-0108: Cloudflare's largest max_batch_size. Locally a batch costs no invocation, and its reports are
# applied together (ADR-0106): 10 per batch halved the throughput of short jobs. ``--batch-size`` sets it.
DEFAULT_BATCH_SIZE = 100
DEFAULT_MAX_CONCURRENCY = 32  # batches in flight at once; a slow performer must not hold up the rest
DEFAULT_MAX_RETRIES = 3  # wrangler's max_retries default; Tsumugi never asks for a retry itself (J-118)
IDLE_WAIT_S = 1.0  # re-check the queue at least this often when nothing arrives (delayed retries)
STORE_RETRY_FIRST_S = 0.1  # ADR-0131: a queue file that refused a write is tried again, doubling to 1 s


_RAW_DECODE: Final = json.JSONDecoder().raw_decode  # json.loads without its checks for whitespace


def decode_body(text: str) -> JsonValue:
    """A message's JSON: as ``json.loads`` reads it, the compact text the runtime writes read directly."""
    try:
        value, end = _RAW_DECODE(text)
    except json.JSONDecodeError:
        end = -1
    return cast(JsonValue, value) if end == len(text) else json.loads(text)


class LocalMessage:
    """One delivered message (``ports.QueueMessage``)."""

    __slots__ = ("_attempts", "_body", "acked", "id", "retried", "retry_delay_ms")

    def __init__(self, leased: LeasedMessage) -> None:
        self.id = leased.id
        self._body = decode_body(leased.body)
        self._attempts = leased.attempts
        self.acked = False
        self.retried = False
        self.retry_delay_ms = 0

    @property
    def body(self) -> JsonValue:
        return self._body

    @property
    def attempts(self) -> int:
        return self._attempts

    def ack(self) -> None:
        self.acked, self.retried = True, False

    def retry(self, delay_seconds: int | None = None) -> None:
        self.acked, self.retried = False, True
        self.retry_delay_ms = max(0, int(delay_seconds or 0)) * 1000


BatchHandler = Callable[[list[LocalMessage]], Awaitable[None]]


class QueueConsumer(Handoff):
    """Leases batches from a ``DurableQueue`` and runs ``handler`` on them, several batches at a time."""

    def __init__(
        self,
        queue: DurableQueue,
        handler: BatchHandler,
        clock: Clock,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self._queue = queue
        self._handler = handler
        self._clock = clock
        self._batch_size = batch_size
        self._free = max_concurrency  # batch slots free: a batch in flight holds one
        self._freed = asyncio.Event()
        self._max_retries = max_retries
        self._batches: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._waiting = False  # found nothing to lease: sends hand their messages over meanwhile
        self._unsettled: list[tuple[list[int], list[tuple[int, int]]]] = []  # settles the disk refused
        # Batches that finish in the same turn of the event loop settle in one transaction, written at
        # the next turn (ADR-0177): the batches a shard's report batch answered together end together.
        self._due_acked: list[int] = []
        self._due_retried: list[tuple[int, int]] = []
        self._due_scheduled = False
        self._store_failures = 0

    async def run(self) -> None:
        """Deliver until ``stop()``."""
        self._queue.handoff = self
        try:
            await self._run()
        finally:
            self._queue.handoff = None

    async def _run(self) -> None:
        while True:
            await self._slot()
            if self._stopping:
                self._release()
                return
            self._queue.arrived.clear()  # cleared before leasing, so a send during the lease still wakes us
            try:
                self._settle_unsettled()
                leased = self._queue.lease(self._batch_size)
            except sqlite3.OperationalError as error:  # ADR-0131: a full disk pauses delivery, never ends it
                self._release()
                await self._store_failed(error)
                continue
            if self._store_failures:
                log.warning("tsumugi: the dispatch queue is written again")
                self._store_failures = 0
            if not leased:
                self._release()
                await self._wait_for_messages()
                continue
            self._start(leased)

    def room(self) -> int:
        """``Handoff.room``: while this waits with nothing visible to lease, a batch per free slot."""
        if not self._waiting or self._stopping or self._queue.arrived.is_set():
            return 0  # busy leasing, stopping, or older messages are visible: they go first
        return self._free * self._batch_size

    def take(self, leased: list[LeasedMessage]) -> None:
        """``Handoff.take``: deliver messages a send stored leased, in batches, each in a free slot."""
        for start in range(0, len(leased), self._batch_size):
            self._free -= 1
            self._start(leased[start : start + self._batch_size])

    def _start(self, leased: list[LeasedMessage]) -> None:
        task = asyncio.get_running_loop().create_task(self._deliver(leased))
        self._batches.add(task)
        task.add_done_callback(self._batches.discard)

    async def _slot(self) -> None:
        while self._free <= 0:
            self._freed.clear()
            await self._freed.wait()
        self._free -= 1

    def _release(self) -> None:
        self._free += 1
        self._freed.set()

    async def stop(self, grace_s: float) -> None:
        """Stop leasing; give batches in flight ``grace_s`` to finish, then cancel them (leases released)."""
        self._stopping = True
        self._queue.arrived.set()
        if self._batches:
            _, pending = await asyncio.wait(set(self._batches), timeout=grace_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        self._settle_due()  # now: the loop may not turn again
        try:
            self._settle_unsettled()
        except sqlite3.OperationalError:
            pass  # still leased on disk: the next start voids the leases and redelivers (ADR-0053)

    async def _store_failed(self, error: sqlite3.OperationalError) -> None:
        """Log once per episode, then wait (a send wakes us sooner) before trying the queue file again."""
        self._store_failures += 1
        if self._store_failures == 1:
            log.error("tsumugi: the dispatch queue cannot be written (%s); delivery resumes with it", error)
        delay_s = min(IDLE_WAIT_S, STORE_RETRY_FIRST_S * 2 ** (self._store_failures - 1))
        try:
            await asyncio.wait_for(self._queue.arrived.wait(), delay_s)
        except TimeoutError:
            pass

    async def _wait_for_messages(self) -> None:
        timeout_s = IDLE_WAIT_S
        try:
            next_visible_at = self._queue.next_visible_at()
        except sqlite3.OperationalError:
            next_visible_at = None  # the next lease meets the same error and backs off
        if next_visible_at is not None:
            timeout_s = min(timeout_s, max(0.0, (next_visible_at - self._clock.now()) / 1000))
        self._waiting = True
        try:
            await asyncio.wait_for(self._queue.arrived.wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            self._waiting = False

    async def _deliver(self, leased: list[LeasedMessage]) -> None:
        messages = [LocalMessage(row) for row in leased]
        failed = False
        try:
            await self._handler(messages)
        except asyncio.CancelledError:
            # Shutting down: whatever was not acked goes back to the queue now (ADR-0053).
            self._settle_or_keep(
                [m.id for m in messages if m.acked], [(m.id, 0) for m in messages if not m.acked]
            )
            self._release()
            raise
        except Exception:
            log.exception("tsumugi: queue handler failed; unacked messages will be retried")
            failed = True
        try:
            self._settle(messages, failed)
        finally:
            self._release()

    def _settle(self, messages: list[LocalMessage], failed: bool) -> None:
        now_ms = self._clock.now()
        acked: list[int] = []
        retried: list[tuple[int, int]] = []
        for message in messages:
            if message.retried or (failed and not message.acked):
                if message.attempts > self._max_retries:
                    log.warning(
                        "tsumugi: dropping queue message %d after %d deliveries", message.id, message.attempts
                    )
                    acked.append(message.id)
                else:
                    retried.append((message.id, now_ms + message.retry_delay_ms))
            else:
                acked.append(message.id)
        self._settle_or_keep(acked, retried)

    def _settle_or_keep(self, acked: list[int], retried: list[tuple[int, int]]) -> None:
        """Settle at the event loop's next turn, with every batch that ends before it (ADR-0177)."""
        self._due_acked += acked
        self._due_retried += retried
        if not self._due_scheduled:
            self._due_scheduled = True
            asyncio.get_running_loop().call_soon(self._settle_due)

    def _settle_due(self) -> None:
        """Settle what the batches ended with, or keep it for the run loop to retry (the messages stay
        leased)."""
        acked, retried = self._due_acked, self._due_retried
        self._due_acked, self._due_retried, self._due_scheduled = [], [], False
        if not acked and not retried:
            return
        try:
            self._queue.settle(acked, retried)
        except sqlite3.OperationalError as error:
            if not self._unsettled:
                log.error("tsumugi: cannot settle queue messages (%s); retrying", error)
            self._unsettled.append((acked, retried))

    def _settle_unsettled(self) -> None:
        while self._unsettled:
            acked, retried = self._unsettled[0]
            self._queue.settle(acked, retried)
            self._unsettled.pop(0)
