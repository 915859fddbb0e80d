"""The typed enqueue paths of define_tsumugi (J-22..J-25, J-39, J-42, J-50, J-70, J-203a)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.core.config import BindingConfig, OnSettled, Policy, Rate
from tsumugi.core.wire_format import hash_to_shard
from tsumugi.errors import EnqueueError, InvalidJobIdError, MissingBindingsError, RequiredKeyError
from tsumugi.performer import JobContext, Performer


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Charge(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"concurrency_key"})

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Notify(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"MAIL": Mail, "CHARGE": Charge, "Notify": Notify}


async def test_enqueue_sends_one_element_enqueue_many_and_returns_the_id(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    job_id = await tsumugi.enqueue(env, binding="MAIL", payload={"to": "a"}, max_attempts=5)
    # J-22: one enqueue_many RPC to MAIL#0; no config -> no settings (J-50)
    assert job_id == "MAIL#0:j00001"
    assert namespace.calls == [
        ("MAIL#0", [{"binding": "MAIL", "payload": {"to": "a"}, "maxAttempts": 5}], None)
    ]


async def test_settings_travel_with_every_enqueue(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(
        performers=PERFORMERS,
        bindings={
            "MAIL": BindingConfig(policy=Policy(concurrency=20, rate=Rate(100, 60_000)), sweep_after_ms=1)
        },
        on_failure="Notify",
        on_settled=OnSettled("Notify", ["COMPLETED"]),
    )
    await tsumugi.enqueue(env, binding="MAIL", payload=1)
    await tsumugi.enqueue(env, binding="CHARGE", payload=1, concurrency_key="c")
    (_, _, mail_settings), (_, _, charge_settings) = namespace.calls
    # J-50 + J-180: {policy?, sweepAfterMs?, failedRetentionMs?, onFailure?, onSettled?}
    assert mail_settings["policy"]["concurrency"] == 20
    assert mail_settings["policy"]["rate"] == {"tokens": 100, "intervalMs": 60_000}
    assert mail_settings["sweepAfterMs"] == 1 and "failedRetentionMs" not in mail_settings
    assert mail_settings["onFailure"] == "Notify"
    assert mail_settings["onSettled"] == {"binding": "Notify", "states": ["COMPLETED"]}
    assert charge_settings == {
        "onFailure": "Notify",
        "onSettled": {"binding": "Notify", "states": ["COMPLETED"]},
    }


async def test_split_binding_routes_by_partition_key(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"shards": 4}})
    job_id = await tsumugi.enqueue(env, binding="MAIL", payload=1, partition_key="order:9")
    # J-18 vector: "order:9" % 4 == 2; partitionKey is routing only, never sent (§5.2)
    assert job_id.startswith("MAIL#2:")
    assert namespace.calls[0][1] == [{"binding": "MAIL", "payload": 1}]
    with pytest.raises(InvalidJobIdError) as caught:
        await tsumugi.enqueue(env, binding="MAIL", payload=1)
    # J-19: never a silent fallback to shard 0
    assert str(caught.value) == (
        "MAIL is split into shards=4 and requires partitionKey, omitting it drops the per-key guarantees"
    )


async def test_enqueue_many_groups_per_shard_and_restores_input_order(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"shards": 2}})
    keys = ["cust-1", "customer:c1", "order:9", ""]  # J-18 vectors: shards 0, 1, 0, 1
    inputs = [{"binding": "MAIL", "payload": i, "partition_key": k} for i, k in enumerate(keys)]
    inputs.insert(1, {"binding": "CHARGE", "payload": "c", "concurrency_key": "k"})
    ids = await tsumugi.enqueue_many(env, inputs)
    # J-39: one RPC per destination shard, ids in input order
    assert sorted(name for name, _, _ in namespace.calls) == ["CHARGE#0", "MAIL#0", "MAIL#1"]
    assert [hash_to_shard(k, 2) for k in keys] == [0, 1, 0, 1]
    sent = {name: [item["payload"] for item in items] for name, items, _ in namespace.calls}
    assert sent == {"MAIL#0": [0, 2], "MAIL#1": [1, 3], "CHARGE#0": ["c"]}
    assert [i.split(":")[0] for i in ids] == ["MAIL#0", "CHARGE#0", "MAIL#1", "MAIL#0", "MAIL#1"]
    assert len(set(ids)) == 5
    assert await tsumugi.enqueue_many(env, []) == []


async def test_environment_is_validated_first_and_success_is_cached(namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    env: dict[str, Any] = {"JOB_SHARD": namespace, "TSUMUGI_QUEUE": object()}
    with pytest.raises(MissingBindingsError) as caught:
        await tsumugi.enqueue(env, binding="MAIL", payload=1)
    # J-24: the message is the configuration report; nothing was sent
    assert str(caught.value).startswith(
        "tsumugi: the wrangler configuration is incomplete\n✗ TSUMUGI_DB (D1)"
    )
    assert namespace.calls == []
    env["TSUMUGI_DB"] = object()  # failure is not cached: fixing the env heals without redeploy
    await tsumugi.enqueue(env, binding="MAIL", payload=1)
    del env["TSUMUGI_DB"]  # success is cached per instance
    await tsumugi.enqueue(env, binding="MAIL", payload=2)
    assert len(namespace.calls) == 2


async def test_required_keys_are_enforced_on_every_typed_path(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    # J-70: TypeError "<binding> requires <key>", before any RPC
    with pytest.raises(RequiredKeyError, match=r"^CHARGE requires concurrency_key$"):
        await tsumugi.enqueue(env, binding="CHARGE", payload=1)
    with pytest.raises(TypeError):
        await tsumugi.enqueue_many(env, [{"binding": "CHARGE", "payload": 1}])
    with pytest.raises(TypeError):
        await tsumugi.jobs(env).enqueue("CHARGE", 1)
    assert namespace.calls == []
    # REST shares the client but not the check (§5.1)
    assert (await tsumugi.rest_enqueue(env, {"binding": "CHARGE", "payload": 1})).startswith("CHARGE#0:")


async def test_on_enqueue_supplies_defaults_but_never_overrides(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(
        performers=PERFORMERS,
        on_enqueue=lambda input: (
            {"timeout_ms": 300_000, "delay_ms": 5} if input["binding"] == "MAIL" else None
        ),
    )
    await tsumugi.enqueue(env, binding="MAIL", payload=1, run_at=99)
    await tsumugi.enqueue(env, binding="MAIL", payload=2, timeout_ms=1)
    first, second = (items[0] for _, items, _ in namespace.calls)
    # J-42: caller values win; a caller-set run_at shadows a default delay_ms (no J-26 conflict)
    assert first == {"binding": "MAIL", "payload": 1, "runAt": 99, "timeoutMs": 300_000}
    assert second == {"binding": "MAIL", "payload": 2, "timeoutMs": 1, "delayMs": 5}


async def test_invalid_input_is_rejected_before_any_rpc(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    with pytest.raises(InvalidJobIdError, match="invalid binding name"):  # J-25
        await tsumugi.enqueue(env, binding="bad-name", payload=1)
    with pytest.raises(EnqueueError, match="unknown binding: OTHER"):  # ADR-0058
        await tsumugi.enqueue(env, binding="OTHER", payload=1)
    with pytest.raises(ValueError, match="mutually exclusive"):  # README decision 3
        await tsumugi.enqueue(env, binding="MAIL", payload=1, run_at=1, delay_ms=1)
    assert namespace.calls == []


async def test_jobs_positional_form_and_env_with_attributes(namespace: Any) -> None:
    tsumugi = define_tsumugi({"performers": PERFORMERS})  # a single dict works too (§2)
    env = SimpleNamespace(JOB_SHARD=namespace, TSUMUGI_DB=object(), TSUMUGI_QUEUE=object())
    job_id = await tsumugi.jobs(env).enqueue("MAIL", {"x": 1}, priority=3)
    assert job_id == "MAIL#0:j00001"
    assert namespace.calls[0][1] == [{"binding": "MAIL", "payload": {"x": 1}, "priority": 3}]
    assert await tsumugi.jobs(env).enqueue_many([{"binding": "MAIL", "payload": 2}]) == ["MAIL#0:j00002"]


async def test_shard_for_routes_by_partition_key_and_configure_takes_objects(namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"shards": 4}}, on_failure="Notify")
    env = {"JOB_SHARD": namespace}  # J-203a: shard_for runs no startup validation
    shard = tsumugi.shard_for(env, "MAIL", "order:9")
    assert await shard.state_of("MAIL#2:j00001") == "SCHEDULED"
    await shard.configure(policy={"concurrency": 5})
    await tsumugi.shard_for(env, "MAIL", "cust-1").configure(
        {"policy": Policy(paused=True), "sweepAfterMs": 9}
    )
    # J-175: configure replaces the settings; ADR-0059: notice targets stay in pinned settings
    (configured,) = namespace.shards["MAIL#2"].configured
    assert configured["policy"]["concurrency"] == 5 and configured["onFailure"] == "Notify"
    assert "sweepAfterMs" not in configured
    (other,) = namespace.shards["MAIL#0"].configured
    assert other["policy"]["paused"] is True and other["sweepAfterMs"] == 9
    with pytest.raises(InvalidJobIdError):
        tsumugi.shard_for(env, "MAIL")


async def test_per_key_override_functions_are_resolved_for_the_enqueued_keys(
    env: Any, namespace: Any
) -> None:
    policy = Policy(per_key_concurrency_overrides=lambda key: 3 if key == "vip" else None)
    tsumugi = define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"policy": policy}})
    await tsumugi.enqueue_many(
        env,
        [
            {"binding": "MAIL", "payload": 1, "concurrency_key": "vip"},
            {"binding": "MAIL", "payload": 2, "concurrency_key": "free"},
        ],
    )
    # ADR-0056: a function becomes a mapping for the keys this RPC carries
    assert namespace.calls[0][2]["policy"]["perKeyConcurrencyOverrides"] == {"vip": 3}
    with pytest.raises(ValueError, match="not functions"):
        await tsumugi.shard_for(env, "MAIL").configure(policy=policy)
