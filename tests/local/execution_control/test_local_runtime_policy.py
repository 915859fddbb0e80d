"""End to end on the local runtime: runtime policy, pause, per-key limits and overrides, diagnostics
(J-143, J-147..J-149b, J-175, J-176, J-185, ADR-0056)."""

from __future__ import annotations

from typing import Any

from .conftest import MakeLocal

NOT_BLOCKED = {"capacity": False, "tokens": False, "perKey": False, "perKeyTokens": False, "paused": False}


def gated(key: str | None, count: int, gate: str) -> list[dict[str, Any]]:
    item: dict[str, Any] = {"binding": "MAIL"}
    if key is not None:
        item["concurrency_key"] = key
    return [{**item, "payload": {"key": key, "gate": gate, "n": n}} for n in range(count)]


async def test_configure_overrides_static_concurrency_until_reset(local: MakeLocal) -> None:
    # J-175: configure pins; J-176: reset returns to the static bindings config
    app = await local(bindings={"MAIL": {"policy": {"concurrency": 3}}})
    handle = app.app.shard_for(app.env, "MAIL")
    await handle.configure(policy={"concurrency": 1})
    await app.app.enqueue_many(app.env, gated(None, 4, "g"))
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "one attempt")
    diagnostics = await handle.diagnostics()
    assert diagnostics["policy"]["concurrency"] == 1
    assert diagnostics["blocked"] == {**NOT_BLOCKED, "capacity": True}
    await handle.reset_policy(app.app.static_settings("MAIL"))
    await app.until(lambda: len(app.record.of("MAIL")) == 3, "the static concurrency")
    assert app.record.peak["MAIL/None"] == 3
    app.open("g")
    await app.until(lambda: len(app.record.of("MAIL")) == 4, "every job")


async def test_pause_and_resume(local: MakeLocal) -> None:
    # J-149b: paused shards accept enqueues and dispatch nothing until resumed
    app = await local()
    handle = app.app.shard_for(app.env, "MAIL")
    await handle.update_policy({"paused": True})
    job_id = await app.enqueue()
    await app.until(lambda: _blocked(handle, "paused"), "the tick to report the pause")
    assert await app.state(job_id) == "SCHEDULED" and app.record.of("MAIL") == []
    await handle.update_policy({"paused": False})
    await app.settled(job_id, "COMPLETED")


async def _blocked(handle: Any, reason: str) -> bool:
    return bool((await handle.diagnostics())["blocked"][reason])


async def test_per_key_concurrency_holds_with_a_mapping_override(local: MakeLocal) -> None:
    # J-143.3 and ADR-0056: "vip" may run 2 at once, every other key 1, null keys are unlimited
    policy = {"per_key_concurrency_overrides": {"vip": 2}}
    app = await local(bindings={"MAIL": {"policy": policy}})
    await app.app.enqueue_many(app.env, [*gated("vip", 4, "g"), *gated("a", 3, "g"), *gated(None, 2, "g")])
    await app.until(lambda: len(app.record.of("MAIL")) == 5, "vip 2 + a 1 + null 2")
    handle = app.app.shard_for(app.env, "MAIL")
    assert await _blocked(handle, "perKey")
    app.open("g")
    await app.until(lambda: len(app.record.of("MAIL")) == 9, "every job")
    assert (app.record.peak["MAIL/vip"], app.record.peak["MAIL/a"], app.record.peak["MAIL/None"]) == (2, 1, 2)


async def test_per_key_rate_with_a_function_override_follows_the_clock(local: MakeLocal) -> None:
    # J-149a, ADR-0056: "bulk" gets 1 per second by function, others the shared 5 per second
    def rates(key: str) -> dict[str, int] | None:
        return {"tokens": 1, "interval_ms": 1_000} if key == "bulk" else None

    policy = {
        "per_key_concurrency": 10,
        "per_key_rate": {"tokens": 5, "interval_ms": 1_000},
        "per_key_rate_overrides": rates,
    }
    app = await local(bindings={"MAIL": {"policy": policy}})
    items = [
        {"binding": "MAIL", "payload": {"key": k, "n": n}, "concurrency_key": k}
        for k in ("bulk", "x")
        for n in range(3)
    ]
    await app.app.enqueue_many(app.env, items)
    await app.until(lambda: len(app.record.of("MAIL")) == 4, "bulk 1 + x 3")
    handle = app.app.shard_for(app.env, "MAIL")
    await app.until(lambda: _blocked(handle, "perKeyTokens"), "the per-key token block")
    assert sorted(s.payload["key"] for s in app.record.of("MAIL")) == ["bulk", "x", "x", "x"]
    await app.advance(999)
    assert len(app.record.of("MAIL")) == 4
    # J-148's ceil((1 - 0.999) / 0.001) is 2 in binary floating point, so a tick that happened to run
    # at +999 plans its wake-up 1 ms late; +1001 covers both that and the +1000 planned at +0.
    await app.advance(2)
    await app.until(lambda: len(app.record.of("MAIL")) == 5, "a bulk token after one second")
    await app.advance(1_000)
    await app.until(lambda: len(app.record.of("MAIL")) == 6, "the last bulk job")


async def test_global_rate_and_diagnostics(local: MakeLocal) -> None:
    # J-148, J-185: tokens block, the shard wakes when a token is due; outbox drained by the tick
    app = await local(bindings={"MAIL": {"policy": {"rate": {"tokens": 2, "interval_ms": 1_000}}}})
    ids = await app.app.enqueue_many(app.env, [{"binding": "MAIL", "payload": {"n": n}} for n in range(3)])
    handle = app.app.shard_for(app.env, "MAIL")
    await app.until(lambda: _blocked(handle, "tokens"), "the token block")
    diagnostics = await handle.diagnostics()
    assert diagnostics["policy"]["rate"] == {"tokens": 2, "intervalMs": 1_000}
    await app.until(lambda: _active(handle, 1), "two of three to complete")
    assert len(app.record.of("MAIL")) == 2
    await app.advance(500)
    await app.until(lambda: _active(handle, 0), "the third after one token's time")
    assert sorted(s.job_id for s in app.record.of("MAIL")) == sorted(ids)
    await app.until(lambda: _outbox_empty(handle), "the projection")


async def _active(handle: Any, count: int) -> bool:
    return bool((await handle.diagnostics())["active"] == count)


async def _outbox_empty(handle: Any) -> bool:
    return bool((await handle.diagnostics())["outbox"] == 0)
