"""create_client and the package-level untyped helpers (§5.1, J-200..J-203a)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import client
from tsumugi.client import create_client
from tsumugi.errors import ConfigurationError, EnqueueError


async def test_create_client_applies_its_bindings_and_needs_only_job_shard(namespace: Any) -> None:
    jobs = create_client({"MAIL": {"shards": 2, "failed_retention_ms": 10}})
    env = {"JOB_SHARD": namespace}  # J-200: no D1, no Queue, no startup check
    job_id = await jobs.enqueue(env, {"binding": "MAIL", "payload": 1, "partition_key": "customer:c1"})
    # J-201: shards and retention mirror the main Worker's config; J-18: "customer:c1" % 2 == 1
    assert job_id.startswith("MAIL#1:")
    assert namespace.calls == [("MAIL#1", [{"binding": "MAIL", "payload": 1}], {"failedRetentionMs": 10})]


async def test_create_client_does_not_enforce_required_keys_or_registration(namespace: Any) -> None:
    jobs = create_client()
    # J-202: no typing, no required keys; any valid binding name goes
    ids = await jobs.enqueue_many({"JOB_SHARD": namespace}, [{"binding": "ANY", "payload": None}])
    assert ids == ["ANY#0:j00001"]


async def test_create_client_applies_on_enqueue(namespace: Any) -> None:
    jobs = create_client(on_enqueue=lambda _: {"priority": 7})
    await jobs.enqueue({"JOB_SHARD": namespace}, {"binding": "MAIL", "payload": 1})
    assert namespace.calls[0][1] == [{"binding": "MAIL", "payload": 1, "priority": 7}]  # J-42


async def test_package_level_enqueue_is_untyped_shard_zero_without_settings(namespace: Any) -> None:
    env = {"JOB_SHARD": namespace}
    job_id = await client.enqueue(env, {"binding": "MAIL", "payload": 1, "partition_key": "order:9"})
    ids = await client.enqueue_many(
        env, [{"binding": "MAIL", "payload": 2}, {"binding": "CHARGE", "payload": 3}]
    )
    # §5.1: always shard 0, partition key ignored, no settings pushed
    assert job_id == "MAIL#0:j00001"
    assert ids == ["MAIL#0:j00002", "CHARGE#0:j00001"]
    assert all(settings is None for _, _, settings in namespace.calls)


async def test_package_level_enqueue_still_validates_options(namespace: Any) -> None:
    with pytest.raises(EnqueueError, match="max_attempts"):  # J-29 on every library path
        await client.enqueue({"JOB_SHARD": namespace}, {"binding": "MAIL", "payload": 1, "max_attempts": 0})


async def test_package_level_shard_for_takes_a_shard_index(namespace: Any) -> None:
    shard = client.shard_for({"JOB_SHARD": namespace}, "MAIL", 3)
    # J-203a: an index, not a partition key
    await shard.configure({"policy": {"concurrency": 1}})
    assert namespace.shards["MAIL#3"].configured[0]["policy"]["concurrency"] == 1
    assert "onFailure" not in namespace.shards["MAIL#3"].configured[0]


async def test_missing_job_shard_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="JOB_SHARD is not configured"):
        await client.enqueue({}, {"binding": "MAIL", "payload": 1})
