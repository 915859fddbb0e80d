"""Debounce at enqueue inside the shard (ADR-0149), on a FixedClock."""

from __future__ import annotations

from typing import Any

from .conftest import START, Harness


async def outcome(h: Harness, **item: Any) -> dict[str, Any]:
    item.setdefault("binding", "MAIL")
    item.setdefault("payload", None)
    [answer] = await h.shard.enqueue_outcomes([item])
    return answer


async def test_second_enqueue_in_the_window_replaces_payload_and_pushes_run_after(h: Harness) -> None:
    first = await outcome(h, payload={"n": 1}, debounceKey="k", debounceMs=1000)
    assert first["status"] == "created" and first["runAfter"] == START + 1000
    h.clock.set(START + 400)
    second = await outcome(h, payload={"n": 2}, debounceKey="k", debounceMs=1000)
    assert second == {"id": first["id"], "status": "debounced", "runAfter": START + 1400}
    assert await h.tick_at(START + 1000) == []  # the old end of the window passes quietly
    [message] = await h.tick_at(START + 1400)
    assert message["jobId"] == first["id"]
    assert h.snap(first["id"])["payload"] == '{"n":2}'


async def test_enqueue_many_returns_the_same_id(h: Harness) -> None:
    first = await h.enqueue(debounceKey="k", debounceMs=1000)
    assert await h.enqueue(debounceKey="k", debounceMs=1000) == first


async def test_max_bounds_the_total_delay(h: Harness) -> None:
    first = await outcome(h, debounceKey="k", debounceMs=1000, debounceMaxMs=2500)
    answers = []
    for at in (800, 1600, 2400):
        h.clock.set(START + at)
        answers.append(await outcome(h, debounceKey="k", debounceMs=1000, debounceMaxMs=2500))
    assert [a["runAfter"] for a in answers] == [START + 1800, START + 2500, START + 2500]
    assert {a["id"] for a in answers} == {first["id"]}


async def test_after_the_window_a_new_job_is_created(h: Harness) -> None:
    first = await outcome(h, debounceKey="k", debounceMs=1000)
    await h.tick_at(START + 1000)  # due and dispatched
    second = await outcome(h, debounceKey="k", debounceMs=1000)
    assert second["status"] == "created" and second["id"] != first["id"]


async def test_a_due_job_not_yet_dispatched_closes_the_window(h: Harness) -> None:
    first = await outcome(h, debounceKey="k", debounceMs=1000)
    h.clock.set(START + 1000)  # run_after reached, no tick yet
    second = await outcome(h, debounceKey="k", debounceMs=1000)
    assert second["status"] == "created" and second["id"] != first["id"]


async def test_a_cancelled_job_ends_the_window(h: Harness) -> None:
    first = await outcome(h, debounceKey="k", debounceMs=1000)
    assert (await h.shard.cancel(first["id"]))["ok"]
    second = await outcome(h, debounceKey="k", debounceMs=1000)
    assert second["status"] == "created" and second["id"] != first["id"]


async def test_keys_are_independent_and_within_one_batch(h: Harness) -> None:
    answers = await h.shard.enqueue_outcomes(
        [
            {"binding": "MAIL", "payload": 1, "debounceKey": "a", "debounceMs": 1000},
            {"binding": "MAIL", "payload": 2, "debounceKey": "b", "debounceMs": 1000},
            {"binding": "MAIL", "payload": 3, "debounceKey": "a", "debounceMs": 2000},
        ]
    )
    assert [a["status"] for a in answers] == ["created", "created", "debounced"]
    assert answers[2]["id"] == answers[0]["id"] and answers[2]["runAfter"] == START + 2000
    assert h.snap(answers[0]["id"])["payload"] == "3"
    assert h.snap(answers[0]["id"])["run_after"] == START + 2000
    h.clock.set(START + 1500)  # the batch stored the pushed end: still in the window
    again = await outcome(h, payload=4, debounceKey="a", debounceMs=1000)
    assert again["status"] == "debounced" and again["id"] == answers[0]["id"]


async def test_other_options_of_the_second_call_are_ignored(h: Harness) -> None:
    first = await outcome(h, debounceKey="k", debounceMs=1000, priority=1, maxAttempts=2)
    await outcome(h, debounceKey="k", debounceMs=1000, priority=9, maxAttempts=7)
    snap = h.snap(first["id"])
    assert (snap["priority"], snap["max_attempts"]) == (1, 2)
