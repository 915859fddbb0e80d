"""Runtime policy through ``shard_for(...)`` and per-key limits with overrides (J-143, J-147..J-149b, J-175,
J-176, ADR-0056), and per-shard diagnostics (J-185, J-186)."""

from __future__ import annotations

from typing import Any

from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS

from .conftest import START, Stack

NOT_BLOCKED = {"capacity": False, "tokens": False, "perKey": False, "perKeyTokens": False, "paused": False}


def keyed(key: str, count: int) -> list[dict[str, Any]]:
    return [{"binding": "MAIL", "payload": f"{key}/{n}", "concurrency_key": key} for n in range(count)]


def keys_of(messages: list[dict[str, Any]]) -> list[str]:
    """The concurrency keys of the dispatched jobs, sorted (jobs of one key tie on order, J-142)."""
    return sorted(str(m["payload"]).split("/")[0] for m in messages)


async def test_configure_takes_precedence_over_static_settings_until_reset() -> None:
    # J-175: pinned, so the settings every enqueue carries (J-50) are ignored; J-176: reset unpins
    stack = Stack(bindings={"MAIL": {"policy": {"concurrency": 3}, "sweep_after_ms": 50_000}})
    handle = stack.app.shard_for(stack.env, "MAIL")
    await stack.app.enqueue_many(stack.env, [{"binding": "MAIL", "payload": n} for n in range(6)])
    pinned = await handle.configure(policy={"concurrency": 1}, sweep_after_ms=1_000)
    assert (pinned["policy"]["concurrency"], pinned["sweepAfterMs"]) == (1, 1_000)
    await stack.enqueue()  # carries concurrency 3, ignored while pinned
    [message] = await stack.tick()
    assert (await handle.diagnostics())["policy"]["concurrency"] == 1
    reset = await handle.reset_policy(stack.app.static_settings("MAIL"))
    assert (reset["policy"]["concurrency"], reset["sweepAfterMs"]) == (3, 50_000)
    assert len(await stack.tick()) == 2  # one in flight + two more = the static 3
    assert message["jobId"].startswith("MAIL#0:")


async def test_configure_replaces_the_whole_settings_object() -> None:
    # J-175: omitted fields revert to defaults, not to the static config
    stack = Stack(bindings={"MAIL": {"policy": {"per_key_concurrency": 4}, "failed_retention_ms": 9}})
    await stack.enqueue()
    handle = stack.app.shard_for(stack.env, "MAIL")
    wire = await handle.configure(sweep_after_ms=2_000)
    assert wire["policy"]["perKeyConcurrency"] == 1
    assert (wire["sweepAfterMs"], wire["failedRetentionMs"]) == (2_000, 604_800_000)


async def test_reset_without_settings_returns_to_the_last_carried_ones() -> None:
    # J-176: the pin is dropped; the next enqueue-carried settings apply again
    stack = Stack(bindings={"MAIL": {"policy": {"concurrency": 2}}})
    await stack.enqueue()
    handle = stack.app.shard_for(stack.env, "MAIL")
    await handle.configure(policy={"concurrency": 9})
    assert (await handle.reset_policy())["policy"]["concurrency"] == 2


async def test_pause_stops_dispatch_only_and_resume_restarts_it(stack: Stack) -> None:
    # J-149b: reporting and enqueueing continue while paused; diagnostics report the pause
    running = await stack.enqueue()
    [message] = await stack.tick()
    handle = stack.app.shard_for(stack.env, "MAIL")
    assert (await handle.update_policy({"paused": True}))["policy"]["paused"] is True
    waiting = await stack.enqueue()
    await stack.report(message, {"ok": True})
    assert await stack.tick() == []
    assert await stack.state(running) == "COMPLETED"
    diagnostics = await handle.diagnostics()
    assert diagnostics["blocked"] == {**NOT_BLOCKED, "paused": True}
    assert (diagnostics["active"], diagnostics["policy"]["paused"]) == (1, True)
    await handle.update_policy({"paused": False})
    assert [m["jobId"] for m in await stack.tick()] == [waiting]


async def test_per_key_concurrency_skips_a_full_key_without_starving_others(stack: Stack) -> None:
    # J-143.3: skip, not stop; null keys bypass the per-key checks
    await stack.app.enqueue_many(
        stack.env, [*keyed("a", 3), {"binding": "MAIL", "payload": "free"}, *keyed("b", 1)]
    )
    sent = await stack.tick()
    assert keys_of(sent) == ["a", "b", "free"]
    assert (await stack.shard("MAIL#0").diagnostics())["blocked"] == {**NOT_BLOCKED, "perKey": True}


async def test_per_key_rate_refills_with_time() -> None:
    # J-149a: one bucket per key, starting full, refilling at tokens/interval
    stack = Stack(
        bindings={
            "MAIL": {
                "policy": {"per_key_concurrency": 10, "per_key_rate": {"tokens": 2, "interval_ms": 1_000}}
            }
        }
    )
    await stack.app.enqueue_many(stack.env, [*keyed("a", 3), *keyed("b", 1)])
    assert len(await stack.tick()) == 3  # a, a, b
    handle = stack.app.shard_for(stack.env, "MAIL")
    assert (await handle.diagnostics())["blocked"] == {**NOT_BLOCKED, "perKeyTokens": True}
    assert await stack.tick_at(START + 499) == []
    assert len(await stack.tick_at(START + 500)) == 1  # one token after half the interval (J-148)


async def test_per_key_overrides_as_a_mapping() -> None:
    # ADR-0056: a mapping gives some keys their own limits; the single value stays the default
    policy = {
        "per_key_concurrency": 1,
        "per_key_concurrency_overrides": {"vip": 3},
        "per_key_rate": {"tokens": 5, "interval_ms": 60_000},
        "per_key_rate_overrides": {"slow": {"tokens": 1, "interval_ms": 60_000}},
    }
    stack = Stack(bindings={"MAIL": {"policy": policy}})
    await stack.app.enqueue_many(stack.env, [*keyed("vip", 5), *keyed("plain", 2)])
    sent = await stack.tick()
    assert keys_of(sent) == ["plain", "vip", "vip", "vip"]
    for message in sent:
        await stack.report(message, {"ok": True})
    await stack.app.enqueue_many(stack.env, keyed("slow", 2))
    # slow: concurrency default 1, rate override 1/min; vip 2 more; plain 1 more
    sent = await stack.tick()
    assert keys_of(sent) == ["plain", "slow", "vip", "vip"]
    [slow] = [m for m in sent if m["payload"].startswith("slow/")]
    await stack.report(slow, {"ok": True})
    assert await stack.tick() == []  # concurrency is free again, the override's bucket is empty
    assert (await stack.shard("MAIL#0").diagnostics())["blocked"]["perKeyTokens"] is True


async def test_per_key_overrides_as_a_function_of_the_key() -> None:
    # ADR-0056: a function is evaluated for the keys each enqueue carries; None -> the default
    def concurrency(key: str) -> int | None:
        return 2 if key.startswith("team-") else None

    stack = Stack(bindings={"MAIL": {"policy": {"per_key_concurrency_overrides": concurrency}}})
    await stack.app.enqueue_many(stack.env, [*keyed("team-x", 3), *keyed("solo", 3)])
    sent = await stack.tick()
    assert len(sent) == 3  # team-x 2, solo 1
    policy = (await stack.shard("MAIL#0").diagnostics())["policy"]
    assert policy["perKeyConcurrencyOverrides"] == {"team-x": 2}


async def test_diagnostics_report_each_limit_and_the_policy_in_force() -> None:
    # J-185: active counts future jobs; outbox until projected; J-145: blocked persisted per tick
    stack = Stack(
        bindings={"MAIL": {"policy": {"concurrency": 1, "rate": {"tokens": 1, "interval_ms": 10_000}}}}
    )
    handle = stack.app.shard_for(stack.env, "MAIL")
    await stack.enqueue(delay_ms=60_000)
    await stack.enqueue()
    before = await handle.diagnostics()
    assert (before["active"], before["outbox"], before["blocked"]) == (2, 2, NOT_BLOCKED)  # never ticked
    assert before["policy"]["rate"] == {"tokens": 1, "intervalMs": 10_000}
    [message] = await stack.tick()
    await stack.enqueue()
    await stack.tick()
    after = await handle.diagnostics()
    assert (after["active"], after["outbox"]) == (3, 3)  # ADR-0119: new jobs wait for their first projection
    assert after["blocked"] == {**NOT_BLOCKED, "capacity": True}
    await stack.tick_at(stack.clock.now() + FIRST_PROJECTION_DELAY_MS)
    assert (await handle.diagnostics())["outbox"] == 0
    await stack.report(message, {"ok": True})
    await stack.tick()
    assert (await handle.diagnostics())["blocked"] == {**NOT_BLOCKED, "tokens": True}
    assert await handle.state_of(message["jobId"]) == "COMPLETED"  # J-186


async def test_diagnostics_are_per_shard() -> None:
    # J-185 per shard: each shard of a split binding answers for itself
    stack = Stack(bindings={"MAIL": {"shards": 4}})
    await stack.enqueue(partition_key="order:9")
    on_2 = await stack.app.shard_for(stack.env, "MAIL", "order:9").diagnostics()
    on_0 = await stack.app.shard_for(stack.env, "MAIL", "cust-1").diagnostics()
    assert (on_2["active"], on_0["active"]) == (1, 0)
