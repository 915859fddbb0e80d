"""Throttle at enqueue inside the shard (ADR-0150), on a FixedClock."""

from __future__ import annotations

from typing import Any

from .conftest import START, Harness

TWO_PER_SECOND = {"tokens": 2, "intervalMs": 1000}


async def answers(h: Harness, count: int, on_excess: str, key: str = "k") -> list[dict[str, Any]]:
    item = {
        "binding": "MAIL",
        "payload": None,
        "throttleKey": key,
        "throttle": {**TWO_PER_SECOND, "onExcess": on_excess},
    }
    return await h.shard.enqueue_outcomes([dict(item) for _ in range(count)])


async def test_delay_puts_the_excess_at_the_next_free_slots(h: Harness) -> None:
    got = await answers(h, 4, "delay")
    assert [a["status"] for a in got] == ["created"] * 4
    assert [a["runAfter"] for a in got] == [START, START, START + 500, START + 1000]
    sent = await h.tick()
    assert {m["jobId"] for m in sent} == {got[0]["id"], got[1]["id"]}
    assert [m["jobId"] for m in await h.tick_at(START + 500)] == [got[2]["id"]]


async def test_drop_answers_dropped_and_creates_nothing(h: Harness) -> None:
    got = await answers(h, 3, "drop")
    assert [a["status"] for a in got] == ["created", "created", "dropped"]
    assert got[2] == {"id": None, "status": "dropped", "runAfter": START + 500}  # the next free slot
    assert (await h.shard.diagnostics())["active"] == 2


async def test_the_bucket_refills_one_token_per_spacing(h: Harness) -> None:
    await answers(h, 2, "drop")
    h.clock.set(START + 499)
    assert [a["status"] for a in await answers(h, 1, "drop")] == ["dropped"]
    h.clock.set(START + 500)
    assert [a["status"] for a in await answers(h, 2, "drop")] == ["created", "dropped"]


async def test_enqueue_many_gives_the_empty_id_for_a_drop(h: Harness) -> None:
    item = {
        "binding": "MAIL",
        "payload": None,
        "throttleKey": "k",
        "throttle": {"tokens": 1, "intervalMs": 1000, "onExcess": "drop"},
    }
    ids = await h.shard.enqueue_many([item, dict(item)])
    assert ids[0] != "" and ids[1] == ""


async def test_keys_are_independent(h: Harness) -> None:
    a = await answers(h, 2, "drop", key="a")
    b = await answers(h, 2, "drop", key="b")
    assert [x["status"] for x in a + b] == ["created"] * 4


async def test_state_is_durable_in_the_shard(h: Harness) -> None:
    await answers(h, 2, "drop")
    again = h.shards.get("MAIL#0")  # the same SQLite, a fresh coordinator instance would read the same row
    rows = again.ctx.sql.execute("SELECT key, tat FROM throttle_key")
    assert rows == [("k", START + 1000.0)]


async def test_a_unique_key_holder_spends_no_token(h: Harness) -> None:
    item = {
        "binding": "MAIL",
        "payload": None,
        "uniqueKey": "u",
        "throttleKey": "k",
        "throttle": {"tokens": 1, "intervalMs": 1000, "onExcess": "drop"},
    }
    first, second = await h.shard.enqueue_outcomes([item, dict(item)])
    assert (first["status"], second["status"]) == ("created", "existing")
    assert second["id"] == first["id"]
