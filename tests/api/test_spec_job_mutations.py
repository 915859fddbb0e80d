"""Spec audit of job writes: create, single mutations, bulk (A-5, A-38..A-53, J-135)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from tests.api.rest_harness import NOW, Harness, job

NOT_ALLOWED = '{"ok":false,"error":"not allowed in the current state"}'
GONE = (
    '{"ok":false,"error":"job is no longer available: '
    'removed from the coordinator after the retention period"}'
)


async def post_raw(api: httpx.AsyncClient, path: str, body: str) -> tuple[int, Any]:
    response = await api.post(path, content=body.encode())
    return response.status_code, response.json()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('"text"', "body must be an object"),
        ("true", "body must be an object"),
        ("[]", "binding is required"),  # [Q] an array passes step 1
        ('{"binding":"","payload":1}', "binding is required"),
        ('{"binding":7,"payload":1}', "binding is required"),
        ('{"binding":"NOPE","maxAttempts":"x"}', "unknown binding: NOPE"),  # step 3 before 4 and 5
        ('{"binding":"MAIL","maxAttempts":"x"}', "payload is required"),
        ('{"binding":"MAIL","payload":1,"maxAttempts":null}', "maxAttempts must be a number"),
        ('{"binding":"MAIL","payload":1,"maxAttempts":0,"delayMs":"1"}', "delayMs must be a number"),
        ('{"binding":"MAIL","payload":1,"delayMs":-1,"priority":true}', "priority must be a number"),
        ('{"binding":"MAIL","payload":1,"maxAttempts":0.5,"delayMs":-1}', "maxAttempts must be at least 1"),
        ('{"binding":"MAIL","payload":1,"delayMs":-0.5,"uniqueKey":1}', "delayMs must not be negative"),
        (
            '{"binding":"MAIL","payload":1,"uniqueKey":1,"concurrencyKey":2}',
            "concurrencyKey must be a string",
        ),
        ('{"binding":"MAIL","payload":1,"uniqueKey":null}', "uniqueKey must be a string"),
    ],
)
async def test_create_first_failure_wins(api: httpx.AsyncClient, body: str, message: str) -> None:
    # the order of the eight steps is observable.
    assert await post_raw(api, "/api/jobs", body) == (400, {"error": message})


async def test_create_accepts_any_payload_and_fractions(harness: Harness, api: httpx.AsyncClient) -> None:
    # A-38 step 4: null is a payload; A-39: no integer check, empty keys dropped, other fields ignored.
    body = (
        '{"binding":"MAIL","payload":null,"maxAttempts":1.5,"delayMs":0,"priority":-2.5,"uniqueKey":"",'
        '"concurrencyKey":"","runAt":5,"timeoutMs":1,"guarantee":"at-most-once","partitionKey":"p"}'
    )
    response = await api.post("/api/jobs", content=body.encode())
    assert (response.status_code, response.text) == (201, '{"id":"MAIL#0:new1"}')
    assert harness.enqueued == [
        {"binding": "MAIL", "payload": None, "maxAttempts": 1.5, "delayMs": 0, "priority": -2.5}
    ]


@pytest.mark.parametrize(
    "job_id",
    ["MAIL", "MAIL%230", "MAIL%23%3Aa", "MAIL%23x%3Aa", "MAIL%23-1%3Aa", "MAIL%23%2B1%3Aa", "1MAIL%230%3Aa",
     "MA-IL%230%3Aa", "MAIL%230%3A", "MAIL%230%3Aa%3Ab", "MAIL%230%3Aa%23b", "MAIL%230%3Aa%20b", "%230%3Aa"],
)  # fmt: skip
async def test_malformed_ids_never_reach_a_shard(
    harness: Harness, api: httpx.AsyncClient, job_id: str
) -> None:
    # 400 invalid job id for every single mutation; reschedule checks its body first.
    for action in ("retry", "cancel", "reschedule"):
        response = await api.post(f"/api/jobs/{job_id}/{action}", json={"delayMs": 0})
        assert (response.status_code, response.text) == (400, '{"error":"invalid job id"}'), action
    assert harness.shards.calls == []


async def test_well_formed_ids_go_to_their_coordinator(harness: Harness, api: httpx.AsyncClient) -> None:
    # the coordinator is `<binding>#<shard>`, even if it never held the job; unknown -> 410.
    for job_id in ("_b1#12:x-y_Z", "OTHER#3:abc"):
        response = await api.post(f"/api/jobs/{job_id.replace('#', '%23')}/retry")
        assert (response.status_code, response.text) == (410, GONE)
    assert harness.shards.calls == [
        ("retry", ("_b1#12", "_b1#12:x-y_Z")),
        ("retry", ("OTHER#3", "OTHER#3:abc")),
    ]


@pytest.mark.parametrize("action", ["retry", "cancel", "reschedule"])
async def test_mutation_outcome_bodies(harness: Harness, api: httpx.AsyncClient, action: str) -> None:
    # exact bodies for 200 / 409 / 410.
    harness.shards.outcomes.update(
        {"MAIL#0:ok": {"ok": True}, "MAIL#0:no": {"ok": False, "reason": "invalid-state"}}
    )
    expected = {"ok": (200, '{"ok":true}'), "no": (409, NOT_ALLOWED), "gone": (410, GONE)}
    for local_id, (status, text) in expected.items():
        response = await api.post(f"/api/jobs/MAIL%230%3A{local_id}/{action}", json={"runAt": NOW})
        assert (response.status_code, response.text) == (status, text), local_id
        assert response.headers["content-type"] == "application/json; charset=UTF-8"


async def test_cancel_request_of_a_running_job(harness: Harness, api: httpx.AsyncClient) -> None:
    # A-45 superseded by J-135 and the seed page: 200 {"ok":true,"requested":true}.
    harness.shards.outcomes["MAIL#0:r1"] = {"ok": True, "requested": True}
    response = await api.post("/api/jobs/MAIL%230%3Ar1/cancel")
    assert (response.status_code, response.json()) == (200, {"ok": True, "requested": True})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("null", "body must be an object"),
        ("5", "body must be an object"),
        ("[]", "runAt or delayMs is required"),
        ("{}", "runAt or delayMs is required"),
        ('{"priority":1}', "runAt or delayMs is required"),
        ('{"runAt":null}', "runAt must be a number"),
        ('{"runAt":1,"delayMs":"5"}', "delayMs must be a number"),  # types before exclusivity
        ('{"delayMs":1,"priority":"high"}', "priority must be a number"),
        ('{"runAt":1,"delayMs":-1}', "runAt and delayMs are mutually exclusive"),
        ('{"delayMs":-1}', "delayMs must not be negative"),
    ],
)
async def test_reschedule_body_before_the_id(
    harness: Harness, api: httpx.AsyncClient, body: str, message: str
) -> None:
    # first failure wins, and the body is checked before the (here malformed) id.
    assert await post_raw(api, "/api/jobs/not-an-id/reschedule", body) == (400, {"error": message})
    assert harness.shards.calls == []


async def test_reschedule_times(harness: Harness, api: httpx.AsyncClient) -> None:
    # runAt may lie in the past; delayMs is added to the request time; priority travels along.
    await api.post("/api/jobs/MAIL%230%3Aa/reschedule", json={"runAt": 5})
    await api.post("/api/jobs/MAIL%230%3Aa/reschedule", json={"delayMs": 250, "priority": 4})
    assert [c[1][2:] for c in harness.shards.calls] == [(5, None), (NOW + 250, 4)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("null", "body must be an object"),
        ('{"ids":null}', "ids must be an array"),
        ('{"ids":"MAIL#0:a"}', "ids must be an array"),
        ('{"ids":[]}', "ids must not be empty"),
        ('{"ids":["MAIL#0:a",""]}', "ids must be non-empty strings"),
        ('{"ids":["MAIL#0:a",7]}', "ids must be non-empty strings"),
        ('{"state":1,"binding":1}', "binding must be a string"),
        ('{"state":null}', "state must be a string"),
        ('{"unique_key":1,"concurrency_key":1}', "unique_key must be a string"),
        ('{"concurrency_key":false}', "concurrency_key must be a string"),
        ('{"state":""}', "state must be one of FAILED, STALLED for retry"),
        ('{"state":"SCHEDULED","created_from":"x"}', "state must be one of FAILED, STALLED for retry"),
        ('{"created_from":"1","limit":0}', "created_from must be a number"),
        ('{"created_to":null}', "created_to must be a number"),
        ('{"limit":null}', "limit must be a number"),
        ('{"limit":0.5}', "limit must be at least 1"),
        ('{"limit":-3}', "limit must be at least 1"),
    ],
)
async def test_bulk_retry_first_failure_wins(
    harness: Harness, api: httpx.AsyncClient, body: str, message: str
) -> None:
    # ids mode when `ids` is present (null included), else filter mode, checked in order.
    assert await post_raw(api, "/api/jobs/bulk-retry", body) == (400, {"error": message})
    assert harness.shards.calls == []


async def test_bulk_limits_and_messages(harness: Harness, api: httpx.AsyncClient) -> None:
    # 200 ids at most; the cancel message names its own state; ids mode ignores every other field.
    too_many = json.dumps({"ids": [f"MAIL#0:j{i}" for i in range(201)]})
    assert await post_raw(api, "/api/jobs/bulk-cancel", too_many) == (
        400, {"error": "ids must not exceed 200 entries"})  # fmt: skip
    assert await post_raw(api, "/api/jobs/bulk-cancel", '{"state":"FAILED"}') == (
        400, {"error": "state must be one of SCHEDULED for cancel"})  # fmt: skip
    status, body = await post_raw(api, "/api/jobs/bulk-cancel", '{"ids":["MAIL#0:a"],"state":9,"limit":"x"}')
    assert (status, body) == (
        200,
        {"ok": [], "failed": [{"id": "MAIL#0:a", "reason": "gone"}], "remaining": 0},
    )


async def test_bulk_filter_selection_clips_and_floors(harness: Harness, api: httpx.AsyncClient) -> None:
    # retry takes FAILED/STALLED, cancel SCHEDULED; A-50: limit clipped to 200 and floored, oldest
    # first; A-51: remaining = matches - selected.
    await harness.add_jobs(*[job(f"MAIL#0:f{i:03d}", state="FAILED", created_at=i) for i in range(205)])
    await harness.add_jobs(job("MAIL#0:s", state="SCHEDULED", created_at=0), job("SMS#0:t", state="STALLED"))
    status, body = await post_raw(api, "/api/jobs/bulk-retry", '{"limit":1e9,"binding":"","unique_key":""}')
    assert (status, len(body["failed"]), body["remaining"]) == (200, 200, 6)
    assert body["failed"][0] == {"id": "MAIL#0:f000", "reason": "gone"}
    _, body = await post_raw(api, "/api/jobs/bulk-retry", '{"limit":2.9,"created_from":10,"created_to":20}')
    assert [f["id"] for f in body["failed"]] == ["MAIL#0:f010", "MAIL#0:f011"] and body["remaining"] == 9
    _, body = await post_raw(api, "/api/jobs/bulk-cancel", "[]")  # [Q] an array is an empty filter
    assert (body["failed"], body["remaining"]) == ([{"id": "MAIL#0:s", "reason": "gone"}], 0)


async def test_bulk_result_order(harness: Harness, api: httpx.AsyncClient) -> None:
    # one call per coordinator in first-appearance order; invalid ids last; always 200.
    harness.shards.outcomes.update(
        {"SMS#1:b": {"ok": True}, "MAIL#0:c": {"ok": False, "reason": "invalid-state"}}
    )
    body = '{"ids":["junk","SMS#1:b","MAIL#0:c","SMS#1:d","MAIL#0:a:b"]}'
    assert await post_raw(api, "/api/jobs/bulk-retry", body) == (200, {
        "ok": ["SMS#1:b"],
        "failed": [{"id": "SMS#1:d", "reason": "gone"}, {"id": "MAIL#0:c", "reason": "invalid-state"},
                   {"id": "junk", "reason": "invalid-id"}, {"id": "MAIL#0:a:b", "reason": "invalid-id"}],
        "remaining": 0,
    })  # fmt: skip
    assert [c[1][0] for c in harness.shards.calls] == ["SMS#1", "MAIL#0"]
