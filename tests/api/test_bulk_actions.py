"""Bulk actions over a whole filter: POST /api/bulk, GET /api/bulk/{id} (ADR-0151)."""

from __future__ import annotations

from typing import Any

import httpx
from tests.api.rest_harness import NOW, Harness, job

from tsumugi.api.bulk_runner import BATCH_SIZE, step
from tsumugi.storage.bulk_actions import BulkActions

FAILED = 450  # more than two batches


async def _failed_jobs(harness: Harness, count: int, binding: str = "MAIL") -> list[str]:
    ids = [f"{binding}#{n % 2}:f{n:04d}" for n in range(count)]  # two shards
    await harness.add_jobs(
        *(job(i, binding=binding, state="FAILED", created_at=NOW - 10_000 + n) for n, i in enumerate(ids))
    )
    for job_id in ids:
        harness.shards.outcomes[job_id] = {"ok": True}
    return ids


async def _until_done(api: httpx.AsyncClient, bulk_id: str) -> dict[str, Any]:
    for _ in range(50):  # every poll runs at most one batch; three are needed here
        body: dict[str, Any] = (await api.get(f"/api/bulk/{bulk_id}")).json()
        if body["state"] == "done":
            return body
    raise AssertionError(f"{bulk_id} did not finish: {body}")


async def test_dry_run_counts_and_changes_nothing(harness: Harness, api: httpx.AsyncClient) -> None:
    await _failed_jobs(harness, FAILED)
    answer = await api.post(
        "/api/bulk", json={"action": "retry", "filter": {"binding": "MAIL"}, "dryRun": True}
    )
    assert (answer.status_code, answer.json()) == (200, {"matched": FAILED})
    assert harness.shards.calls == []


async def test_retry_every_match_in_bounded_batches_across_shards(
    harness: Harness, api: httpx.AsyncClient
) -> None:
    ids = await _failed_jobs(harness, FAILED)
    await harness.add_jobs(
        job("MAIL#0:other", state="COMPLETED"), job("SMS#0:s1", binding="SMS", state="FAILED")
    )
    started = await api.post("/api/bulk", json={"action": "retry", "filter": {"binding": "MAIL"}})
    assert started.status_code == 202
    body = started.json()
    assert (body["state"], body["matched"], body["filter"]) == ("running", FAILED, {"binding": "MAIL"})
    done = await _until_done(api, body["id"])
    assert (done["matched"], done["done"], done["failed"], done["remaining"]) == (FAILED, FAILED, 0, 0)
    calls = [c for c in harness.shards.calls if c[0] == "mutate_many"]
    touched = [job_id for _, (_, _, group) in calls for job_id in group]
    assert sorted(touched) == sorted(ids)  # each once, SMS and COMPLETED jobs never
    assert max(len(group) for _, (_, _, group) in calls) <= BATCH_SIZE
    assert {shard for _, (shard, _, _) in calls} == {"MAIL#0", "MAIL#1"}


async def test_a_cap_bounds_the_action_and_refusals_are_counted(
    harness: Harness, api: httpx.AsyncClient
) -> None:
    ids = await _failed_jobs(harness, 30)
    harness.shards.outcomes[ids[0]] = {"ok": False, "reason": "invalid-state"}
    started = (await api.post("/api/bulk", json={"action": "retry", "filter": {}, "cap": 10})).json()
    assert started["matched"] == 10
    done = await _until_done(api, started["id"])
    assert (done["done"], done["failed"]) == (9, 1)


async def test_cancel_may_include_running_jobs(harness: Harness, api: httpx.AsyncClient) -> None:
    await harness.add_jobs(job("MAIL#0:r1", state="RUNNING"), job("MAIL#0:s1", state="SCHEDULED"))
    harness.shards.outcomes.update({"MAIL#0:r1": {"ok": True, "requested": True}, "MAIL#0:s1": {"ok": True}})
    plain = (await api.post("/api/bulk", json={"action": "cancel", "dryRun": True})).json()
    running = (
        await api.post("/api/bulk", json={"action": "cancel", "dryRun": True, "includeRunning": True})
    ).json()
    assert (plain["matched"], running["matched"]) == (1, 2)


async def test_reschedule_every_match(harness: Harness, api: httpx.AsyncClient) -> None:
    await harness.add_jobs(job("MAIL#0:w1", state="SCHEDULED"), job("MAIL#0:w2", state="SCHEDULED"))
    harness.shards.outcomes.update({"MAIL#0:w1": {"ok": True}, "MAIL#0:w2": {"ok": True}})
    started = (
        await api.post("/api/bulk", json={"action": "reschedule", "delayMs": 5000, "priority": 3})
    ).json()
    done = await _until_done(api, started["id"])
    assert done["done"] == 2
    calls = sorted(c for c in harness.shards.calls if c[0] == "reschedule")
    assert calls == [("reschedule", ("MAIL#0", f"MAIL#0:w{n}", NOW + 5000, 3)) for n in (1, 2)]


async def test_bad_bodies_are_refused(api: httpx.AsyncClient) -> None:
    for body, message in [
        ({"action": "delete"}, "action must be one of retry, cancel, reschedule"),
        (
            {"action": "retry", "filter": {"state": "SCHEDULED"}},
            "filter.state must be one of FAILED, STALLED for retry",
        ),
        ({"action": "retry", "cap": 0}, "cap must be a number of at least 1"),
        ({"action": "reschedule"}, "reschedule takes one of runAt and delayMs"),
    ]:
        answer = await api.post("/api/bulk", json=body)
        assert (answer.status_code, answer.json()) == (400, {"error": message})
    assert (await api.get("/api/bulk/bulk_nope")).status_code == 404


async def test_the_original_filter_mode_still_acts_on_one_page(
    harness: Harness, api: httpx.AsyncClient
) -> None:
    # A-49..A-51: unchanged beside the new mode
    await _failed_jobs(harness, 250)
    body = (await api.post("/api/jobs/bulk-retry", json={"binding": "MAIL"})).json()
    assert (len(body["ok"]), body["remaining"]) == (200, 50)


async def test_progress_is_stored_and_a_new_caller_resumes_from_the_cursor(harness: Harness) -> None:
    # The state is in the read model's database: a fresh store (a restarted process) takes over.
    ids = await _failed_jobs(harness, 250)
    async with harness.client() as api:
        started = (await api.post("/api/bulk", json={"action": "retry", "dryRun": True})).json()
    assert started == {"matched": 250}
    from tsumugi.api.routes_bulk import progress_body
    from tsumugi.storage.bulk_actions import BulkRecord

    store = BulkActions(harness.db)
    record = BulkRecord(
        "bulk_t",
        "retry",
        {},
        {"includeRunning": False, "cap": None},
        "running",
        250,
        0,
        0,
        None,
        None,
        NOW,
        NOW,
        NOW,
    )
    await store.create(record)
    assert await step(store, harness.shards, "bulk_t", NOW)  # one batch, more to do
    again = BulkActions(harness.db)
    assert not await step(again, harness.shards, "bulk_t", NOW)  # the rest, then done
    stored = await again.get("bulk_t")
    assert stored is not None and progress_body(stored)["done"] == 250 and stored.state == "done"
    touched = [j for c in harness.shards.calls for j in c[1][2]]
    assert sorted(touched) == sorted(ids)


async def test_a_held_lease_keeps_a_second_caller_out(harness: Harness) -> None:
    store = BulkActions(harness.db)
    from tsumugi.storage.bulk_actions import BulkRecord

    await store.create(
        BulkRecord("bulk_l", "retry", {}, {"cap": None}, "running", 1, 0, 0, None, None, NOW, NOW, NOW)
    )
    assert await store.lease("bulk_l", NOW, 10_000)
    assert not await step(store, harness.shards, "bulk_l", NOW + 5_000)
    assert harness.shards.calls == []


async def test_an_action_of_the_wrong_type_is_a_400(api: httpx.AsyncClient) -> None:
    # found by schemathesis: an object as the action answered 500
    answer = await api.post("/api/bulk", json={"action": {"retry": 1}})
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": "action must be one of retry, cancel, reschedule"},
    )
