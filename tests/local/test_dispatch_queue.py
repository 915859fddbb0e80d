"""The durable dispatch queue: persistence, leases, settling, redelivery after a crash (ADR-0053)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.dispatch_queue import LEASE_MS, DurableQueue


async def test_sent_messages_survive_a_reopen(tmp_path: Path, clock: FixedClock, closing: Any) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"jobId": "A#0:a"}, {"jobId": "A#0:b"}])
    queue.close()

    reopened = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    leased = reopened.lease(10)
    assert [m.body for m in leased] == ['{"jobId":"A#0:a"}', '{"jobId":"A#0:b"}']
    assert [m.attempts for m in leased] == [1, 1]


async def test_send_batch_takes_at_most_100_messages(tmp_path: Path, clock: FixedClock, closing: Any) -> None:
    # J-161: a Queue's sendBatch takes at most 100 messages
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    with pytest.raises(ValueError, match="at most 100"):
        await queue.send_batch([{"n": n} for n in range(101)])
    assert queue.depth() == 0


async def test_encoded_messages_are_stored_in_any_number_and_in_order(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    # The runtime's own queue: a tick's messages, past sendBatch's 100, go in together.
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_encoded([f'{{"n":{n}}}' for n in range(250)])
    assert queue.depth() == 250
    assert [m.body for m in queue.lease(300)] == [f'{{"n":{n}}}' for n in range(250)]


async def test_settling_deletes_exactly_the_acked_ids_however_they_are_spread(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": n} for n in range(10)])
    leased = queue.lease(10)
    acked = [leased[n].id for n in (7, 0, 1, 2, 5, 9)]  # out of order, in runs and alone
    queue.settle(acked, [(leased[3].id, clock.now())])
    kept = queue.lease(10)
    assert sorted(m.body for m in kept) == ['{"n":3}']  # the retried one; the others are still leased
    assert queue.depth() == 4  # 3 (retried), and 4, 6 and 8, leased and never settled


async def test_a_leased_message_is_not_leased_twice_ack_deletes(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": n} for n in range(5)])
    first = queue.lease(3)
    second = queue.lease(3)
    assert [m.body for m in first] == ['{"n":0}', '{"n":1}', '{"n":2}']
    assert [m.body for m in second] == ['{"n":3}', '{"n":4}']
    queue.settle([m.id for m in first + second], [])
    assert queue.depth() == 0
    assert queue.lease(10) == []


async def test_a_retried_message_comes_back_with_one_more_attempt(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": 1}])
    (message,) = queue.lease(10)
    queue.settle([], [(message.id, clock.now() + 2_000)])
    assert queue.lease(10) == []  # not visible before its delay
    clock.advance(2_000)
    (again,) = queue.lease(10)
    assert (again.id, again.attempts) == (message.id, 2)


async def test_leases_of_a_crashed_process_are_void_after_restart(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": 1}, {"n": 2}])
    leased = queue.lease(10)
    queue.settle([leased[0].id], [])
    queue.close()  # the process dies with the second message leased and unacked

    restarted = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    assert restarted.lease(10) == []  # still leased ...
    assert restarted.void_leases() == 1  # ... until the runtime voids the leases at start
    (redelivered,) = restarted.lease(10)
    assert (redelivered.body, redelivered.attempts) == ('{"n":2}', 2)


async def test_an_expired_lease_makes_the_message_visible_again(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    queue = closing(DurableQueue(tmp_path / "q.sqlite3", clock))
    await queue.send_batch([{"n": 1}])
    queue.lease(10)
    clock.advance(LEASE_MS)
    assert [m.attempts for m in queue.lease(10)] == [2]
