"""Shards, partition keys and unique keys through ``define_tsumugi`` (J-12, J-19..J-21, J-33..J-37, J-166)."""

from __future__ import annotations

import pytest

from tsumugi.errors import InvalidJobIdError

from .conftest import START, Stack

SPLIT = {"MAIL": {"shards": 4}}


async def test_ids_carry_the_shard_the_partition_key_hashes_to() -> None:
    # J-12, J-18 vectors (mod 4): cust-1 -> 0, order:9 -> 2, customer:c1 -> 1, "" -> 1 (a valid key)
    stack = Stack(bindings=SPLIT)
    for key, shard in [("cust-1", 0), ("order:9", 2), ("customer:c1", 1), ("", 1), ("日本", 0)]:
        job_id = await stack.enqueue(partition_key=key)
        assert job_id.startswith(f"MAIL#{shard}:")
        assert await stack.shard(f"MAIL#{shard}").state_of(job_id) == "SCHEDULED"
    sent = sorted(m["jobId"][:7] for m in await stack.tick())
    assert sent == ["MAIL#0:", "MAIL#0:", "MAIL#1:", "MAIL#1:", "MAIL#2:"]


async def test_a_split_binding_without_partition_key_raises_and_creates_nothing() -> None:
    # J-19, J-166: never a silent fallback to shard 0
    stack = Stack(bindings=SPLIT)
    message = (
        "MAIL is split into shards=4 and requires partitionKey, omitting it drops the per-key guarantees"
    )
    with pytest.raises(InvalidJobIdError) as raised:
        await stack.enqueue()
    assert str(raised.value) == message
    with pytest.raises(InvalidJobIdError):
        await stack.app.enqueue_many(
            stack.env,
            [{"binding": "MAIL", "payload": 1, "partition_key": "a"}, {"binding": "MAIL", "payload": 2}],
        )
    assert stack.shards.shards == {}  # no shard was even reached: the batch fails before any RPC


async def test_one_shard_ignores_the_partition_key() -> None:
    # J-19, J-166: shards <= 1 -> shard 0 whatever the key
    stack = Stack()
    assert (await stack.enqueue(partition_key="order:9")).startswith("MAIL#0:")


async def test_unique_and_concurrency_keys_are_scoped_per_shard() -> None:
    # J-35, J-150, J-166: the same key on two shards neither collides nor serializes
    stack = Stack(bindings=SPLIT)
    on_0 = await stack.enqueue(partition_key="cust-1", unique_key="u", concurrency_key="k")
    on_2 = await stack.enqueue(partition_key="order:9", unique_key="u", concurrency_key="k")
    assert on_0 != on_2 and on_0.startswith("MAIL#0:") and on_2.startswith("MAIL#2:")
    assert {m["jobId"] for m in await stack.tick()} == {on_0, on_2}  # per-key 1, but one per shard
    # the same shard collides and serializes
    again = await stack.enqueue(partition_key="cust-1", unique_key="u")
    assert again == on_0


async def test_unique_key_is_scoped_per_binding() -> None:
    # J-35
    stack = Stack()
    mail = await stack.enqueue(unique_key="u")
    alert = await stack.enqueue(binding="ALERT", unique_key="u")
    assert mail != alert and alert.startswith("ALERT#0:")


async def test_changing_the_shard_count_reroutes_new_jobs_only() -> None:
    # J-20: ids embed the shard, so an old id still resolves on its old shard
    before = Stack(bindings={"MAIL": {"shards": 2}})
    old = await before.enqueue(partition_key="order:9")  # 593456426 % 2 = 0
    after = Stack(bindings={"MAIL": {"shards": 4}})
    after.shards = before.shards
    after.env["JOB_SHARD"] = before.shards
    new = await after.enqueue(partition_key="order:9")  # % 4 = 2
    assert old.startswith("MAIL#0:") and new.startswith("MAIL#2:")
    assert await after.state(old) == "SCHEDULED"
    assert await after.app.shard_for(after.env, "MAIL", "order:9").state_of(old) is None


async def test_a_collision_returns_the_holder_and_creates_nothing(stack: Stack) -> None:
    # J-33
    first = await stack.enqueue(unique_key="order-1", payload=1)
    second = await stack.enqueue(unique_key="order-1", payload=2)
    assert second == first
    assert (await stack.shard("MAIL#0").diagnostics())["active"] == 1
    [message] = await stack.tick()
    assert message["payload"] == 1


async def test_the_reservation_outlives_cancel_and_expires_after_its_window(stack: Stack) -> None:
    # J-34: cancelling does not release the key; J-33: after unique_for_ms a new job is created
    first = await stack.enqueue(unique_key="k", unique_for_ms=10_000, delay_ms=60_000)
    assert await stack.shard_of(first).cancel(first) == {"ok": True}
    assert await stack.enqueue(unique_key="k") == first
    stack.clock.set(START + 9_999)
    assert await stack.enqueue(unique_key="k") == first
    stack.clock.set(START + 10_000)  # expires_at <= now: the reservation is gone
    fresh = await stack.enqueue(unique_key="k")
    assert fresh != first and await stack.state(fresh) == "SCHEDULED"


async def test_default_window_is_a_day(stack: Stack) -> None:
    # J-33 / 5.2: unique_for_ms defaults to 86 400 000
    first = await stack.enqueue(unique_key="d")
    stack.clock.set(START + 86_400_000 - 1)
    assert await stack.enqueue(unique_key="d") == first
    stack.clock.set(START + 86_400_000)
    assert await stack.enqueue(unique_key="d") != first


async def test_a_batch_repeating_a_key_gets_the_first_id(stack: Stack) -> None:
    # J-36
    ids = await stack.app.enqueue_many(
        stack.env,
        [
            {"binding": "MAIL", "payload": 1, "unique_key": "x"},
            {"binding": "MAIL", "payload": 2, "unique_key": "x"},
            {"binding": "MAIL", "payload": 3},
        ],
    )
    assert ids[0] == ids[1] != ids[2]
    assert (await stack.shard("MAIL#0").diagnostics())["active"] == 2


async def test_a_zero_window_is_already_expired_at_the_next_enqueue(stack: Stack) -> None:
    # J-37
    first = await stack.enqueue(unique_key="z", unique_for_ms=0)
    assert await stack.enqueue(unique_key="z") != first
