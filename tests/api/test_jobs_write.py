"""Enqueue and job mutations through the shards (A-20, A-38..A-53, J-131, J-134, J-135)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from tests.api.rest_harness import NOW, Harness, job

from tsumugi.errors import EnqueueError

GONE = "job is no longer available: removed from the coordinator after the retention period"


async def _post(api: httpx.AsyncClient, path: str, body: Any) -> tuple[int, Any]:
    response = await api.post(path, content=json.dumps(body).encode())
    return response.status_code, response.json()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "body must be an object"),
        ("x", "body must be an object"),
        (3, "body must be an object"),
        (True, "body must be an object"),
        ([], "binding is required"),  # A-38 [Q]: an array passes step 1
        ({}, "binding is required"),
        ({"binding": ""}, "binding is required"),
        ({"binding": 5}, "binding is required"),
        ({"binding": "NOPE", "payload": 1}, "unknown binding: NOPE"),
        ({"binding": "MAIL"}, "payload is required"),
        ({"binding": "MAIL", "payload": 1, "maxAttempts": None}, "maxAttempts must be a number"),
        ({"binding": "MAIL", "payload": 1, "maxAttempts": "3"}, "maxAttempts must be a number"),
        ({"binding": "MAIL", "payload": 1, "delayMs": True}, "delayMs must be a number"),
        ({"binding": "MAIL", "payload": 1, "priority": [1]}, "priority must be a number"),
        (
            {"binding": "MAIL", "payload": 1, "maxAttempts": "x", "delayMs": "y"},
            "maxAttempts must be a number",
        ),
        ({"binding": "MAIL", "payload": 1, "maxAttempts": 0}, "maxAttempts must be at least 1"),
        (
            {"binding": "MAIL", "payload": 1, "maxAttempts": 0, "delayMs": -1},
            "maxAttempts must be at least 1",
        ),
        ({"binding": "MAIL", "payload": 1, "delayMs": -1}, "delayMs must not be negative"),
        ({"binding": "MAIL", "payload": 1, "concurrencyKey": 1}, "concurrencyKey must be a string"),
        ({"binding": "MAIL", "payload": 1, "uniqueKey": None}, "uniqueKey must be a string"),
    ],
)
async def test_create_validation_order(
    harness: Harness, api: httpx.AsyncClient, body: Any, message: str
) -> None:
    # first failure wins, 400 {"error": ...}; nothing is enqueued.
    assert await _post(api, "/api/jobs", body) == (400, {"error": message})
    assert harness.enqueued == []


async def test_create_passes_only_known_fields(harness: Harness, api: httpx.AsyncClient) -> None:
    # unknown fields ignored, empty keys dropped, any payload incl. null; 201 {"id"}.
    body = {"binding": "MAIL", "payload": None, "maxAttempts": 2.5, "priority": -1, "uniqueKey": "",
            "concurrencyKey": "c", "timeoutMs": 5, "runAt": 1, "guarantee": "at-most-once"}  # fmt: skip
    assert await _post(api, "/api/jobs", body) == (201, {"id": "MAIL#0:new1"})
    assert harness.enqueued == [
        {"binding": "MAIL", "payload": None, "maxAttempts": 2.5, "priority": -1, "concurrencyKey": "c"}
    ]


async def test_create_reads_json_whatever_the_content_type(harness: Harness, api: httpx.AsyncClient) -> None:
    #
    response = await api.post(
        "/api/jobs", content=b'{"binding":"SMS","payload":{}}', headers={"content-type": "text/plain"}
    )
    assert response.status_code == 201
    for raw in (b"", b"{", b"NaN", b'{"binding": Infinity}', b"\xff"):
        response = await api.post("/api/jobs", content=raw)
        assert (response.status_code, response.json()) == (400, {"error": "body must be valid JSON"})


async def test_create_without_enqueue_is_501_before_the_body(harness: Harness) -> None:
    #
    async with harness.client(harness.app(enqueue=None)) as api:
        response = await api.post("/api/jobs", content=b"garbage")
        assert (response.status_code, response.json()) == (501, {"error": "job creation is not available"})


async def test_enqueue_refusals_are_400_not_500(harness: Harness) -> None:
    # ADR-0066: a split binding without partitionKey (A-39 [Q]) answers 400.
    async def refuse(env: Any, wire: dict[str, Any]) -> str:
        raise EnqueueError("MAIL is split into shards=2 and requires partitionKey")

    async with harness.client(harness.app(enqueue=refuse)) as api:
        status, body = await _post(api, "/api/jobs", {"binding": "MAIL", "payload": 1})
    assert (status, body) == (400, {"error": "MAIL is split into shards=2 and requires partitionKey"})


@pytest.mark.parametrize("action", ["retry", "cancel"])
async def test_single_mutation_outcomes(harness: Harness, api: httpx.AsyncClient, action: str) -> None:
    # J-131: ok 200, invalid-state 409, gone 410, malformed 400; sent to <binding>#<shard>.
    harness.shards.outcomes.update(
        {"MAIL#3:ok": {"ok": True}, "MAIL#3:busy": {"ok": False, "reason": "invalid-state"}}
    )
    assert await _post(api, f"/api/jobs/MAIL%233:ok/{action}", None) == (200, {"ok": True})
    assert await _post(api, f"/api/jobs/MAIL%233:busy/{action}", None) == (
        409,
        {"ok": False, "error": "not allowed in the current state"},
    )
    assert await _post(api, f"/api/jobs/MAIL%233:never/{action}", None) == (410, {"ok": False, "error": GONE})
    for bad in ("nohash", "MAIL%23x:1", "1A%230:x", "MAIL%230:a.b", "MAIL%230:"):
        assert await _post(api, f"/api/jobs/{bad}/{action}", None) == (400, {"error": "invalid job id"})
    assert [c[1][:2] for c in harness.shards.calls] == [("MAIL#3", "MAIL#3:ok"), ("MAIL#3", "MAIL#3:busy"),
                                                      ("MAIL#3", "MAIL#3:never")]  # fmt: skip


async def test_retry_and_cancel_ignore_any_body(harness: Harness, api: httpx.AsyncClient) -> None:
    # no body is read.
    harness.shards.outcomes["MAIL#0:a"] = {"ok": True}
    response = await api.post("/api/jobs/MAIL%230:a/retry", content=b"{not json")
    assert response.status_code == 200


async def test_cancel_of_running_job_reports_requested(harness: Harness, api: httpx.AsyncClient) -> None:
    # A-45 superseded / J-135: {"ok":true,"requested":true}.
    harness.shards.outcomes["MAIL#0:r"] = {"ok": True, "requested": True}
    assert await _post(api, "/api/jobs/MAIL%230:r/cancel", None) == (200, {"ok": True, "requested": True})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1], "runAt or delayMs is required"),
        ("x", "body must be an object"),
        ({"runAt": None}, "runAt must be a number"),
        ({"runAt": 1, "delayMs": "x"}, "delayMs must be a number"),
        ({"delayMs": 1, "priority": "high"}, "priority must be a number"),
        ({"runAt": 1, "delayMs": 1}, "runAt and delayMs are mutually exclusive"),
        ({"priority": 1}, "runAt or delayMs is required"),
        ({"delayMs": -5}, "delayMs must not be negative"),
    ],
)
async def test_reschedule_validation(
    harness: Harness, api: httpx.AsyncClient, body: Any, message: str
) -> None:
    # validated before the id, so even a malformed id answers the body error.
    assert await _post(api, "/api/jobs/garbage/reschedule", body) == (400, {"error": message})
    assert harness.shards.calls == []


async def test_reschedule_computes_the_new_time(harness: Harness, api: httpx.AsyncClient) -> None:
    # runAt as given (past allowed) or request time + delayMs; priority passed along.
    harness.shards.outcomes["MAIL#0:a"] = {"ok": True}
    assert await _post(api, "/api/jobs/MAIL%230:a/reschedule", {"runAt": 5}) == (200, {"ok": True})
    assert await _post(api, "/api/jobs/MAIL%230:a/reschedule", {"delayMs": 1500, "priority": 4}) == (
        200,
        {"ok": True},
    )
    assert await _post(api, "/api/jobs/bad/reschedule", {"delayMs": 1}) == (400, {"error": "invalid job id"})
    assert [c[1] for c in harness.shards.calls] == [
        ("MAIL#0", "MAIL#0:a", 5, None),
        ("MAIL#0", "MAIL#0:a", NOW + 1500, 4),
    ]


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("retry", None, "body must be an object"),
        ("retry", {"ids": None}, "ids must be an array"),
        ("retry", {"ids": "a"}, "ids must be an array"),
        ("retry", {"ids": []}, "ids must not be empty"),
        ("retry", {"ids": ["x"] * 201}, "ids must not exceed 200 entries"),
        ("retry", {"ids": ["a", ""]}, "ids must be non-empty strings"),
        ("retry", {"ids": ["a", 1]}, "ids must be non-empty strings"),
        ("retry", {"binding": 1}, "binding must be a string"),
        ("retry", {"state": None}, "state must be a string"),
        ("retry", {"unique_key": 1, "state": 2}, "state must be a string"),
        ("retry", {"concurrency_key": []}, "concurrency_key must be a string"),
        ("retry", {"state": "SCHEDULED"}, "state must be one of FAILED, STALLED for retry"),
        ("retry", {"state": ""}, "state must be one of FAILED, STALLED for retry"),
        ("cancel", {"state": "FAILED"}, "state must be one of SCHEDULED for cancel"),
        ("cancel", {"created_from": "0"}, "created_from must be a number"),
        ("cancel", {"created_to": None}, "created_to must be a number"),
        ("cancel", {"limit": "1"}, "limit must be a number"),
        ("cancel", {"limit": 0}, "limit must be at least 1"),
    ],
)
async def test_bulk_validation(
    harness: Harness, api: httpx.AsyncClient, path: str, body: Any, message: str
) -> None:
    # first failure wins.
    assert await _post(api, f"/api/jobs/bulk-{path}", body) == (400, {"error": message})
    assert harness.shards.calls == []


async def test_bulk_ids_mode_groups_by_shard(harness: Harness, api: httpx.AsyncClient) -> None:
    # one call per coordinator in order of first appearance; invalid ids last.
    harness.shards.outcomes.update({"MAIL#0:a": {"ok": True}, "SMS#1:b": {"ok": True},
                                    "MAIL#0:c": {"ok": False, "reason": "invalid-state"}})  # fmt: skip
    body = {"ids": ["MAIL#0:a", "bad", "SMS#1:b", "MAIL#0:c", "MAIL#0:gone"], "state": 5}
    status, result = await _post(api, "/api/jobs/bulk-retry", body)
    assert status == 200
    assert result == {
        "ok": ["MAIL#0:a", "SMS#1:b"],
        "failed": [
            {"id": "MAIL#0:c", "reason": "invalid-state"},
            {"id": "MAIL#0:gone", "reason": "gone"},
            {"id": "bad", "reason": "invalid-id"},
        ],
        "remaining": 0,
    }
    assert [c[1] for c in harness.shards.calls] == [
        ("MAIL#0", "retry", ("MAIL#0:a", "MAIL#0:c", "MAIL#0:gone")),
        ("SMS#1", "retry", ("SMS#1:b",)),
    ]


async def test_bulk_filter_mode_takes_oldest_first(harness: Harness, api: httpx.AsyncClient) -> None:
    # accepted states of the action, created_at ASC, id ASC, limit clipped; remaining estimated.
    await harness.add_jobs(
        job("MAIL#0:f3", state="FAILED", created_at=30),
        job("MAIL#0:f1", state="STALLED", created_at=10),
        job("MAIL#0:f2", state="FAILED", created_at=10),
        job("SMS#0:f4", state="FAILED", created_at=5),
        job("MAIL#0:s1", state="SCHEDULED", created_at=1),
    )
    harness.shards.outcomes.update({i: {"ok": True} for i in ("MAIL#0:f1", "MAIL#0:f2", "MAIL#0:f3")})
    status, result = await _post(
        api, "/api/jobs/bulk-retry", {"binding": "MAIL", "limit": 2.7, "unique_key": ""}
    )
    assert (status, result) == (200, {"ok": ["MAIL#0:f1", "MAIL#0:f2"], "failed": [], "remaining": 1})
    status, result = await _post(api, "/api/jobs/bulk-retry", [])
    assert result["remaining"] == 0 and len(result["ok"]) + len(result["failed"]) == 4
    status, result = await _post(api, "/api/jobs/bulk-cancel", {"created_from": 0, "created_to": 1})
    assert result == {"ok": [], "failed": [{"id": "MAIL#0:s1", "reason": "gone"}], "remaining": 0}
    status, result = await _post(api, "/api/jobs/bulk-retry", {"state": "STALLED"})
    assert result["ok"] == ["MAIL#0:f1"]
