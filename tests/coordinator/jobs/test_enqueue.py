"""Enqueue inside the shard (J-22..J-41, J-50, J-51)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS
from tsumugi.core.wire_format import parse_job_id
from tsumugi.errors import EnqueueError, PayloadTooLargeError

from .conftest import START, Harness


async def test_ids_in_input_order_and_shape(h: Harness) -> None:
    # J-12, J-22
    ids = await h.shard.enqueue_many([{"binding": "MAIL", "payload": i} for i in range(3)])
    assert len(set(ids)) == 3
    for job_id in ids:
        parsed = parse_job_id(job_id)
        assert (parsed.binding, parsed.shard, len(parsed.local_id)) == ("MAIL", 0, 24)


async def test_new_job_row_and_snapshot(h: Harness) -> None:
    # J-30, J-31, J-32, J-193
    job_id = await h.enqueue(payload={"to": "a@b"})
    assert h.alarm.at == START  # J-31: armed for now
    assert await h.state(job_id) == "SCHEDULED"
    await h.tick()
    snap = h.snap(job_id)
    assert set(snap) == {
        "id", "seq", "binding", "state", "priority", "attempts", "max_attempts", "concurrency_key",
        "unique_key", "guarantee", "created_at", "updated_at", "dispatched_at", "run_after", "progress",
        "payload", "result", "run_id", "node_id", "attempts_log",
    }  # fmt: skip
    assert snap["payload"] == '{"to":"a@b"}'
    assert (snap["created_at"], snap["max_attempts"], snap["guarantee"]) == (START, 3, "at-least-once")


async def test_explicit_none_means_default(h: Harness) -> None:
    # J-28
    job_id = await h.enqueue(maxAttempts=None, timeoutMs=None, priority=None, guarantee=None)
    [message] = await h.tick()
    assert message["timeoutMs"] == 60_000 and message["claimRequired"] is False
    assert h.snap(job_id)["max_attempts"] == 3 and h.snap(job_id)["priority"] == 0


async def test_delay_and_run_at(h: Harness) -> None:
    # J-26: run_after = run_at if given else now + delay; a past run_at runs at once
    delayed = await h.enqueue(delayMs=5000)
    at = await h.enqueue(runAt=START + 2000)
    past = await h.enqueue(runAt=START - 10)
    assert [m["jobId"] for m in await h.tick()] == [past]
    assert h.alarm.at == START + FIRST_PROJECTION_DELAY_MS  # ADR-0119: the new jobs' first projection
    assert await h.tick_at(START + FIRST_PROJECTION_DELAY_MS) == []
    assert h.alarm.at == START + 2000
    assert [m["jobId"] for m in await h.tick_at(START + 2000)] == [at]
    assert [m["jobId"] for m in await h.tick_at(START + 5000)] == [delayed]


async def test_unique_key_returns_holder_even_after_cancel(h: Harness) -> None:
    # J-33, J-34, J-36
    first = await h.enqueue(uniqueKey="u1")
    assert await h.enqueue(uniqueKey="u1") == first
    batch = await h.shard.enqueue_many(
        [
            {"binding": "MAIL", "payload": 1, "uniqueKey": "u2"},
            {"binding": "MAIL", "payload": 2, "uniqueKey": "u2"},
        ]
    )
    assert batch[0] == batch[1]
    assert (await h.shard.cancel(first))["ok"]
    assert await h.enqueue(uniqueKey="u1") == first  # J-34: the reservation outlives the job


async def test_unique_key_expires(h: Harness) -> None:
    # J-33, J-37: after unique_for_ms a new job is created
    first = await h.enqueue(uniqueKey="u", uniqueForMs=1000)
    h.clock.advance(1000)
    second = await h.enqueue(uniqueKey="u", uniqueForMs=1000)
    assert second != first
    assert await h.enqueue(uniqueKey="z", uniqueForMs=0) != await h.enqueue(uniqueKey="z", uniqueForMs=0)


async def test_pre_assigned_id_is_idempotent(h: Harness) -> None:
    # J-38
    given = "MAIL#0:node000000000000000000001"
    assert await h.enqueue(id=given, runId="r1", nodeId="n1") == given
    assert await h.enqueue(id=given, runId="r1", nodeId="n1", payload="other") == given
    await h.tick()
    assert h.snap(given)["run_id"] == "r1" and h.snap(given)["node_id"] == "n1"
    assert h.snap(given)["payload"] == "null"


async def test_expires_in_ms_reaches_the_message(h: Harness) -> None:
    # J-41: expiresInMs is relative to enqueue time; the message carries expiresAt
    await h.enqueue(expiresInMs=10_000)
    [message] = await h.tick()
    assert message["expiresAt"] == START + 10_000


async def test_carried_settings_apply_and_skip_unchanged_writes(h: Harness) -> None:
    # J-50, J-51
    await h.enqueue(settings={"policy": {"concurrency": 7}})
    assert (await h.shard.diagnostics())["policy"]["concurrency"] == 7
    await h.enqueue(settings={"sweepAfterMs": 1})
    assert (await h.shard.diagnostics())["policy"]["concurrency"] == 100  # omitted fields revert
    await h.enqueue()  # no settings: nothing changes
    assert (await h.shard.diagnostics())["policy"]["concurrency"] == 100


async def test_plain_inputs_write_the_rows_the_full_path_writes(h: Harness) -> None:
    # J-28, J-30 (ADR-0120): a group of {binding, payload} inputs takes the short path; an explicit None
    # option is the default but takes the full path. Apart from the id, the stored rows are the same.
    plain = await h.shard.enqueue_many([{"binding": "MAIL", "payload": {"n": 1.0}}])
    full = await h.shard.enqueue_many([{"binding": "MAIL", "payload": {"n": 1.0}, "priority": None}])

    def stored(job_id: str) -> dict[str, object]:
        columns = [row[1] for row in h.shard.ctx.sql.execute("PRAGMA table_info(job)")]
        [values] = h.shard.ctx.sql.execute("SELECT * FROM job WHERE id = ?", (job_id,))
        return {c: v for c, v in zip(columns, values, strict=True) if c != "id"}

    assert stored(plain[0]) == stored(full[0])
    assert stored(plain[0])["payload"] == '{"n":1}'  # an integral float prints like JavaScript
    assert h.shard.ctx.outbox.fresh_ids(START + 1, 10) == {plain[0]: START, full[0]: START}  # ADR-0119


async def test_run_node_inputs_write_the_rows_the_full_path_writes(h: Harness) -> None:
    # J-30, J-38, F-36: a run's job nodes (id, run, node, partition key, nothing else) take a short path;
    # the same inputs with one explicit default option take the full path. The rows are the same, and an
    # id given twice, in the batch or later, is answered with that id and stored once.
    def node(n: int, **extra: Any) -> dict[str, Any]:
        return {
            "binding": "MAIL",
            "payload": {"n": n},
            "id": f"MAIL#0:node{n:020}",
            "runId": "WIDE:r1",
            "nodeId": f"each:{n}",
            "partitionKey": "WIDE:r1",
            **extra,
        }

    short = await h.shard.enqueue_many([node(1), node(2), node(1)])
    assert await h.shard.enqueue_many([node(3, priority=None)]) == [node(3)["id"]]
    assert short == [node(1)["id"], node(2)["id"], node(1)["id"]]
    assert await h.shard.enqueue_many([node(2), node(4)]) == [node(2)["id"], node(4)["id"]]

    def stored(job_id: str) -> dict[str, object]:
        columns = [row[1] for row in h.shard.ctx.sql.execute("PRAGMA table_info(job)")]
        [values] = h.shard.ctx.sql.execute("SELECT * FROM job WHERE id = ?", (job_id,))
        return {c: v for c, v in zip(columns, values, strict=True) if c not in ("id", "payload", "node_id")}

    assert stored(node(1)["id"]) == stored(node(3)["id"]) == stored(node(4)["id"])
    [(count,)] = h.shard.ctx.sql.execute("SELECT COUNT(*) FROM job")
    assert count == 4
    [(payload, node_id)] = h.shard.ctx.sql.execute(
        "SELECT payload, node_id FROM job WHERE id = ?", (node(2)["id"],)
    )
    assert (payload, node_id) == ('{"n":2}', "each:2")
    assert stored(node(1)["id"])["run_id"] == "WIDE:r1"


async def test_a_run_node_payload_given_as_its_stored_text_is_kept_as_it_is(h: Harness) -> None:
    # F-36, ADR-0179: a run sends a child's payload as the JSON text it froze at expansion; the short and
    # the full path store that text, and the payload limit still holds for it
    def node(n: int, payload_json: object, **extra: Any) -> dict[str, Any]:
        return {"binding": "MAIL", "payloadJson": payload_json, "id": f"MAIL#0:text{n:020}", "runId": "W:r",
                "nodeId": f"each:{n}", "partitionKey": "W:r", **extra}  # fmt: skip

    short, full = '{"b":1,"a":[2.5,"é"]}', '{"n":null}'
    await h.shard.enqueue_many([node(1, short)])
    await h.shard.enqueue_many([node(2, full, priority=None)])
    stored = dict(h.shard.ctx.sql.execute("SELECT id, payload FROM job"))
    assert stored == {node(1, "")["id"]: short, node(2, "")["id"]: full}
    [message] = [m for m in await h.tick() if m["jobId"] == node(1, "")["id"]]
    assert message["payload"] == {"b": 1, "a": [2.5, "é"]}
    too_large = '"' + "x" * 1_048_576 + '"'
    for extra in ({}, {"priority": None}):
        with pytest.raises(PayloadTooLargeError):
            await h.shard.enqueue_many([node(3, too_large, **extra)])
        with pytest.raises(EnqueueError, match="payloadJson must be a string"):
            await h.shard.enqueue_many([node(4, {"n": 1}, **extra)])
    assert len(h.shard.ctx.sql.execute("SELECT id FROM job")) == 2
