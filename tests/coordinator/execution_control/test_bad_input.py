"""Bad input gets a clear error and changes no state (J-13, J-19, J-25, J-29, J-147, J-175, J-176)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.errors import ConfigurationError, EnqueueError, InvalidConfigError, InvalidJobIdError

from .conftest import PERFORMERS, Stack


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"binding": "NOWHERE"}, EnqueueError, "unknown binding: NOWHERE"),
        ({"binding": "MA-IL"}, InvalidJobIdError, "invalid binding name"),
        ({"backoff": {"kind": "linear"}}, EnqueueError, "backoff.kind must be 'fixed' or 'exponential'"),
        ({"backoff": {"kind": "fixed"}}, EnqueueError, "a fixed backoff needs delay_ms"),
        ({"backoff": {"kind": "exponential", "factor": -2}}, EnqueueError, "backoff.factor"),
        ({"max_attempts": 0}, EnqueueError, "max_attempts must be an integer >= 1"),
        ({"timeout_ms": -1}, EnqueueError, "timeout_ms must be a number >= 0"),
        ({"delay_ms": -5}, EnqueueError, "delay_ms must be a number >= 0"),
        ({"priority": float("nan")}, EnqueueError, "priority must be a finite number"),
        ({"traceparent": "00-abc"}, EnqueueError, "traceparent must be a valid W3C Trace Context version 00"),
    ],
)
async def test_a_bad_enqueue_raises_before_any_shard_is_touched(
    stack: Stack, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # J-25, J-29, J-40, J-100, ADR-0058: validated client-side, so no RPC and no job
    with pytest.raises(error, match=message):
        await stack.enqueue(**options)
    assert stack.shards.shards == {}


async def test_one_bad_item_fails_the_whole_batch_before_any_rpc(stack: Stack) -> None:
    # J-29, J-39: inputs are validated before grouping sends anything
    with pytest.raises(EnqueueError):
        await stack.app.enqueue_many(
            stack.env,
            [{"binding": "MAIL", "payload": 1}, {"binding": "MAIL", "payload": 2, "max_attempts": -1}],
        )
    assert stack.shards.shards == {}


async def test_a_missing_partition_key_for_shard_for_raises() -> None:
    # J-19: shard_for follows the same routing as enqueue
    stack = Stack(bindings={"MAIL": {"shards": 2}})
    with pytest.raises(InvalidJobIdError, match="requires partitionKey"):
        stack.app.shard_for(stack.env, "MAIL")
    with pytest.raises(ConfigurationError, match="unknown binding: NOWHERE"):
        stack.app.shard_for(stack.env, "NOWHERE")


@pytest.mark.parametrize(
    "policy",
    [
        {"concurrency": -1},
        {"per_key_concurrency": -1},
        {"reaper_grace_ms": -1},
        {"rate": {"tokens": -1, "interval_ms": 1000}},
        {"per_key_rate": {"tokens": 1, "interval_ms": 0}},
        {"rate": {"tokens": 1}},
        {"per_key_concurrency_overrides": {"k": -2}},
        {"paused": "yes"},
        {"concurency": 1},
    ],
)
def test_bad_static_limits_raise_in_define_tsumugi(policy: dict[str, Any]) -> None:
    # J-147, J-204: static configuration is checked at definition time
    with pytest.raises(InvalidConfigError):
        define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"policy": policy}})


@pytest.mark.parametrize(
    "bindings",
    [{"MAIL": {"shards": 0}}, {"MAIL": {"sweep_after_ms": -1}}, {"MAIL": {"failed_retention_ms": -1}}],
)
def test_bad_shards_or_retention_raise_in_define_tsumugi(bindings: dict[str, Any]) -> None:
    # 10.2, J-204
    with pytest.raises(InvalidConfigError):
        define_tsumugi(performers=PERFORMERS, bindings=bindings)


def test_bindings_for_an_unknown_performer_raise() -> None:
    # J-204
    with pytest.raises(ConfigurationError, match="unknown binding: NOWHERE"):
        define_tsumugi(performers=PERFORMERS, bindings={"NOWHERE": {"shards": 2}})


@pytest.mark.parametrize(
    "call",
    [
        {"policy": {"concurrency": -1}},
        {"policy": {"rate": {"tokens": 1}}},
        {"sweep_after_ms": -1},
        {"failed_retention_ms": -5},
        {"policy": {"per_key_concurrency_overrides": lambda key: 2}},
    ],
)
async def test_a_bad_configure_raises_and_keeps_the_settings(stack: Stack, call: dict[str, Any]) -> None:
    # J-175: nothing reaches the shard, whose settings and pin stay as they were
    await stack.enqueue()
    handle = stack.app.shard_for(stack.env, "MAIL")
    before = await handle.configure(policy={"concurrency": 7})
    with pytest.raises(InvalidConfigError):
        await handle.configure(**call)
    assert (await handle.diagnostics())["policy"] == before["policy"]


@pytest.mark.parametrize(
    "patch",
    [
        {"concurrency": -1},
        {"perKeyConcurrency": 1.5},
        {"rate": {"tokens": 1}},
        {"reaperGraceMs": -1},
        {"paused": "no"},
        {"speed": 3},
    ],
)
async def test_a_bad_policy_patch_raises_and_changes_nothing(stack: Stack, patch: dict[str, Any]) -> None:
    # J-176: update_policy merges only valid fields; a bad one is refused as a whole
    await stack.enqueue()
    handle = stack.app.shard_for(stack.env, "MAIL")
    before = (await handle.diagnostics())["policy"]
    with pytest.raises(InvalidConfigError):
        await handle.update_policy(patch)
    assert (await handle.diagnostics())["policy"] == before


async def test_a_policy_patch_in_either_spelling_merges(stack: Stack) -> None:
    # J-176: only the given fields change; snake_case and camelCase both accepted, None -> default
    await stack.enqueue()
    handle = stack.app.shard_for(stack.env, "MAIL")
    await handle.update_policy({"concurrency": 4, "per_key_rate": {"tokens": 2, "interval_ms": 100}})
    merged = await handle.update_policy({"perKeyConcurrency": 3, "concurrency": None})
    assert merged["policy"]["concurrency"] == 100
    assert merged["policy"]["perKeyConcurrency"] == 3
    assert merged["policy"]["perKeyRate"] == {"tokens": 2, "intervalMs": 100}
