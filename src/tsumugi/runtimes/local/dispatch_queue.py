"""The durable dispatch queue (``env.TSUMUGI_QUEUE``): a SQLite file of messages with leases.

``send_batch`` inserts; the consumer leases a batch, and settles it in one transaction: acked
messages are deleted, retried ones become visible again. A lease is void after a restart, so a
message whose batch was cut short by a crash is delivered again (ADR-0053).

A consumer that found nothing to lease waits as a ``Handoff``: then a send stores its messages already
leased and hands them over, with no lease of its own (ADR-0172). Nothing older is waiting then, so
messages are still delivered oldest first, and each is stored before it is handed over.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol, cast

from tsumugi.clock import Clock
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import SqlExecutor
from tsumugi.runtimes.local.sqlite_files import open_store

SEND_BATCH_LIMIT = 100  # a Cloudflare Queue accepts at most 100 messages per sendBatch (J-161)
LEASE_MS = (
    15 * 60 * 1000
)  # a consumer invocation's wall-time limit; a batch still out after it is redelivered

# One encoder for every message: ``json.dumps`` with options builds a new encoder on each call.
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS message (
        id INTEGER PRIMARY KEY,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        visible_at INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS message_visible ON message (visible_at, id)",
)


def _check_size(messages: int) -> None:
    if messages > SEND_BATCH_LIMIT:
        raise ValueError(f"sendBatch takes at most {SEND_BATCH_LIMIT} messages, got {messages}")


def id_runs(ids: Iterable[int]) -> list[tuple[int, int]]:
    """``ids`` as ``(first, last)`` runs of consecutive ids, in order: ``[3, 1, 2, 7]`` gives
    ``[(1, 3), (7, 7)]``."""
    runs: list[tuple[int, int]] = []
    for message_id in sorted(ids):
        if runs and message_id <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], max(runs[-1][1], message_id))
        else:
            runs.append((message_id, message_id))
    return runs


class LeasedMessage(NamedTuple):
    id: int
    body: str
    attempts: int  # deliveries so far, this one included (Cloudflare's ``message.attempts``)


class Handoff(Protocol):
    """A consumer that takes messages straight from a send, leased as they are stored (ADR-0172)."""

    def room(self) -> int:
        """How many messages it takes now: 0 unless it waits with nothing to lease and a slot free."""
        ...

    def take(self, leased: list[LeasedMessage]) -> None:
        """Deliver ``leased`` (at most ``room()``), stored leased, as if they had been leased."""
        ...


class DurableQueue:
    """Producer and store of the local dispatch queue; ``sql`` is the store of ``path``."""

    def __init__(self, path: Path, clock: Clock, *, sql: SqlExecutor | None = None) -> None:
        self._db = open_store(path, sql)
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._clock = clock
        self.arrived = asyncio.Event()  # set by send_batch and by retries; the consumer waits on it
        self.handoff: Handoff | None = None  # the consumer, which hands itself over while it waits

    async def send_batch(self, messages: Sequence[JsonObject]) -> None:
        """Persist ``messages`` (at most 100, like ``Queue.sendBatch``) before returning."""
        _check_size(len(messages))
        await self.send_encoded([_ENCODE(body) for body in messages])

    async def send_encoded(self, bodies: Sequence[str]) -> None:
        """Messages already encoded as JSON objects (``ports.EncodedDispatchQueue``), any number of them,
        stored in one transaction: a tick's sends share one commit."""
        if not bodies:
            return
        now_ms = self._clock.now()
        handoff = self.handoff
        room = handoff.room() if handoff is not None else 0
        taken, rest = bodies[:room], bodies[room:]

        def run() -> list[LeasedMessage]:
            leased: list[LeasedMessage] = []
            if taken:  # stored as a lease would leave them: their first delivery, out for LEASE_MS
                [(top,)] = self._db.execute("SELECT max(id) FROM message")
                first = 1 if top is None else int(top) + 1
                leased = [LeasedMessage(first + n, body, 1) for n, body in enumerate(taken)]
                self._db.execute_many(
                    "INSERT INTO message (id, body, attempts, visible_at) VALUES (?, ?, 1, ?)",
                    [(message.id, message.body, now_ms + LEASE_MS) for message in leased],
                )
            if rest:
                self._db.execute_many(
                    "INSERT INTO message (body, visible_at) VALUES (?, ?)", [(body, now_ms) for body in rest]
                )
            return leased

        leased = self._db.transaction(run)
        if leased and handoff is not None:
            handoff.take(leased)
        if rest:
            self.arrived.set()

    def void_leases(self) -> int:
        """Make every leased message visible again (at start: no consumer of a past process is alive)."""
        now_ms = self._clock.now()
        voided = self._db.execute(
            "UPDATE message SET visible_at = ? WHERE visible_at > ? RETURNING id", (now_ms, now_ms)
        )
        return len(voided)

    def lease(self, limit: int) -> list[LeasedMessage]:
        """Lease up to ``limit`` visible messages, oldest first, for ``LEASE_MS``."""
        now_ms = self._clock.now()
        rows = self._db.execute(
            "UPDATE message SET visible_at = ?, attempts = attempts + 1 WHERE id IN "
            "(SELECT id FROM message WHERE visible_at <= ? ORDER BY visible_at, id LIMIT ?) "
            "RETURNING id, body, attempts",
            (now_ms + LEASE_MS, now_ms, limit),
        )
        return sorted(LeasedMessage(*row) for row in cast(list[tuple[int, str, int]], rows))

    def next_visible_at(self) -> int | None:
        """When the earliest message not yet visible becomes visible (None: no message at all)."""
        [(earliest,)] = self._db.execute("SELECT min(visible_at) FROM message")
        return None if earliest is None else int(earliest)

    def settle(self, acked: Iterable[int], retried: Iterable[tuple[int, int]]) -> None:
        """Delete ``acked`` ids and make ``retried`` ``(id, visible_at)`` pairs visible again, atomically."""
        acked_runs = id_runs(acked)
        retried_rows = [(visible_at, message_id) for message_id, visible_at in retried]

        def run() -> None:
            if acked_runs:  # a batch's ids are mostly consecutive: a range per run of them
                self._db.execute_many("DELETE FROM message WHERE id BETWEEN ? AND ?", acked_runs)
            if retried_rows:
                self._db.execute_many("UPDATE message SET visible_at = ? WHERE id = ?", retried_rows)

        if acked_runs or retried_rows:
            self._db.transaction(run)
        if retried_rows:
            self.arrived.set()

    def depth(self) -> int:
        """Messages stored, leased or not."""
        [(count,)] = self._db.execute("SELECT count(*) FROM message")
        return int(count or 0)

    def close(self) -> None:
        close = getattr(self._db, "close", None)
        if callable(close):
            close()
