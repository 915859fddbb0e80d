"""A policy change that reaches a binding before its first enqueue, on the local runtime (issue 13 item 5).

J-176: the patch merges onto the binding's configured settings, not onto the built-in defaults the shard
holds until an enqueue carries the settings (J-50; ADR-0131). Both ways in: REST and ``shard_for``.
"""

from __future__ import annotations

from tests.local.flow_support import TOKEN, rest_client

from tsumugi import bearer_auth

from .conftest import MakeLocal

CONFIGURED = {"policy": {"reaper_grace_ms": 1000, "concurrency": 3}}


async def test_a_rest_policy_change_before_the_first_enqueue_keeps_the_configured_settings(
    local: MakeLocal,
) -> None:
    app = await local(
        bindings={"MAIL": CONFIGURED},
        auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
        runtime={"vars": {"TSUMUGI_TOKEN": TOKEN}},
    )
    async with rest_client(app.app.asgi(app.env)) as client:
        answer = await client.post("/api/bindings/MAIL/policy", json={"paused": True})
        assert answer.status_code == 200, answer.text
        policy = answer.json()["settings"]["policy"]
        assert (policy["reaperGraceMs"], policy["concurrency"], policy["paused"]) == (1000, 3, True)
        job_id = await app.enqueue()
        diagnostics = await app.shard("MAIL#0").diagnostics()
        assert diagnostics["policy"]["reaperGraceMs"] == 1000 and diagnostics["active"] == 1
        resumed = await client.post("/api/bindings/MAIL/policy", json={"paused": False})
        assert resumed.json()["settings"]["policy"]["reaperGraceMs"] == 1000
    await app.settled(job_id, "COMPLETED")


async def test_shard_for_update_policy_before_the_first_enqueue_keeps_the_configured_settings(
    local: MakeLocal,
) -> None:
    app = await local(bindings={"MAIL": CONFIGURED})
    merged = await app.app.shard_for(app.env, "MAIL").update_policy({"concurrency": 2})
    assert merged["policy"]["reaperGraceMs"] == 1000 and merged["policy"]["concurrency"] == 2
