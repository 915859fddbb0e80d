"""Exact limits, priority over the whole backlog, pause, diagnostics and runtime settings.

J-141..J-149b, J-162 (decision 5: exact), J-175, J-176, J-185, J-186.
"""

from __future__ import annotations

from .conftest import START, Harness


async def test_concurrency_above_200_is_exact(h: Harness) -> None:
    # decision 5 of the spec README: concurrency above 200 enforced exactly
    settings = {"policy": {"concurrency": 250}}
    await h.shard.enqueue_many([{"binding": "MAIL", "payload": i} for i in range(600)], settings)
    first = await h.tick()
    assert len(first) == 250
    assert await h.shards.settle() >= 0
    assert h.queue.take() == []
    for message in first[:10]:
        await h.shard.report(message["jobId"], {"ok": True})
    assert len(await h.tick()) == 10
    assert (await h.shard.diagnostics())["blocked"]["capacity"] is True


async def test_priority_orders_the_whole_backlog(h: Harness) -> None:
    # decision 5: a high-priority job behind a >200-job backlog still runs first
    settings = {"policy": {"concurrency": 1}}
    await h.shard.enqueue_many([{"binding": "MAIL", "payload": i} for i in range(300)], settings)
    urgent = await h.enqueue(settings=settings, priority=10)
    [message] = await h.tick()
    assert message["jobId"] == urgent


async def test_per_key_concurrency_and_override(h: Harness) -> None:
    # J-143.3, ADR-0044
    settings = {"policy": {"perKeyConcurrencyOverrides": {"vip": 2}}}
    items = [{"binding": "MAIL", "payload": i, "concurrencyKey": k} for i, k in enumerate("aavvv")]
    for item in items:
        item["concurrencyKey"] = {"a": "a", "v": "vip"}[item["concurrencyKey"]]
    await h.shard.enqueue_many(items, settings)
    messages = await h.tick()
    assert len(messages) == 3  # one "a", two "vip"
    assert (await h.shard.diagnostics())["blocked"]["perKey"] is True


async def test_rate_limit_persists_bucket_and_wakes(h: Harness) -> None:
    # J-148, J-149, J-163 (token wake-up instead of spinning)
    settings = {"policy": {"rate": {"tokens": 2, "intervalMs": 1000}}}
    await h.shard.enqueue_many([{"binding": "MAIL", "payload": i} for i in range(3)], settings)
    assert len(await h.tick()) == 2
    assert (await h.shard.diagnostics())["blocked"]["tokens"] is True
    assert h.alarm.at == START + 500
    assert len(await h.tick_at(START + 500)) == 1


async def test_per_key_rate(h: Harness) -> None:
    # J-149a
    settings = {"policy": {"perKeyConcurrency": 5, "perKeyRate": {"tokens": 1, "intervalMs": 1000}}}
    await h.shard.enqueue_many(
        [{"binding": "MAIL", "payload": i, "concurrencyKey": "k"} for i in range(2)], settings
    )
    assert len(await h.tick()) == 1
    assert (await h.shard.diagnostics())["blocked"]["perKeyTokens"] is True
    assert len(await h.tick_at(START + 1000)) == 1


async def test_pause_and_resume(h: Harness) -> None:
    # J-149b, J-176
    await h.enqueue()
    wire = await h.shard.update_policy({"paused": True})
    assert wire["policy"]["paused"] is True
    assert await h.tick() == []
    diagnostics = await h.shard.diagnostics()
    assert diagnostics["blocked"]["paused"] is True and diagnostics["active"] == 1
    await h.shard.update_policy({"paused": False})
    assert len(await h.tick()) == 1


async def test_update_policy_pins_and_reset_returns_to_static(h: Harness) -> None:
    # J-175, J-176
    static = {"policy": {"concurrency": 7}}
    await h.enqueue(settings=static)
    merged = await h.shard.update_policy({"concurrency": 3})
    assert merged["policy"]["concurrency"] == 3
    await h.enqueue(settings=static)  # pinned: carried settings are ignored
    assert (await h.shard.diagnostics())["policy"]["concurrency"] == 3
    reset = await h.shard.reset_policy()
    assert reset["policy"]["concurrency"] == 7


async def test_configure_replaces_and_pins(h: Harness) -> None:
    # J-175: configure replaces the whole settings object and pins it
    await h.enqueue(settings={"policy": {"concurrency": 7}, "sweepAfterMs": 5})
    wire = await h.shard.configure({"policy": {"perKeyConcurrency": 2}})
    assert wire["policy"]["concurrency"] == 100 and wire["policy"]["perKeyConcurrency"] == 2
    assert wire["sweepAfterMs"] == 300_000
    await h.enqueue(settings={"policy": {"concurrency": 9}})
    assert (await h.shard.diagnostics())["policy"]["concurrency"] == 100


async def test_diagnostics_before_first_tick(h: Harness) -> None:
    # J-185, J-186
    job_id = await h.enqueue(delayMs=100_000)
    diagnostics = await h.shard.diagnostics()
    assert diagnostics["active"] == 1 and diagnostics["outbox"] == 1
    assert diagnostics["blocked"] == {
        "capacity": False,
        "tokens": False,
        "perKey": False,
        "perKeyTokens": False,
        "paused": False,
    }
    assert await h.shard.state_of(job_id) == "SCHEDULED"
    assert await h.shard.state_of("MAIL#0:none") is None


async def test_reset_with_given_settings_keeps_notice_targets(h: Harness) -> None:
    # J-176 via REST passes the static binding settings; ADR-0044: notice targets survive
    await h.enqueue(settings={"onFailure": "ALERT"})
    await h.shard.update_policy({"concurrency": 2})
    reset = await h.shard.reset_policy({"policy": {"concurrency": 4}})
    assert reset["policy"]["concurrency"] == 4 and reset["onFailure"] == "ALERT"
