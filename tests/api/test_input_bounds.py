"""Hostile numbers, strings, sizes and paths never answer 500 (issue 13 items 3, 4, 6, 7; ADR-0133).

Numbers beyond what the stores hold are clamped at the edge, lone surrogates are stored as the Workers
runtime stores them, a body over 1 MiB or a payload over 120 KiB of JSON is 413 with the limit in the
message, a full store is a JSON 503, and paths are decoded as the original's router decodes them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.api.rest_harness import AUTH, NOW, Harness, RecordingFlows, job, make_harness

from tsumugi.api import MissingBindingsReport
from tsumugi.api.wire import MAX_BODY_BYTES
from tsumugi.core.input_bounds import MAX_DURATION_MS, MAX_INSTANT_MS, MAX_SAFE_INTEGER
from tsumugi.core.wire_format import MAX_PAYLOAD_BYTES
from tsumugi.errors import StorageFullError
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations

BODY_PATHS = (
    "/api/jobs",
    "/api/jobs/MAIL%230:a/reschedule",
    "/api/jobs/bulk-retry",
    "/api/jobs/bulk-cancel",
    "/api/runs",
    "/api/bindings/MAIL/policy",
)
HUGE = (2**63, 2**64, 1e19, 1e300, 1e308)
RESCHEDULE = "/api/jobs/MAIL%230%3Aa1/reschedule"
UI = "<!doctype html><title>Tsumugi</title>"


def _raw(body: Any) -> bytes:
    """JSON as a client sends it; ``ensure_ascii`` escapes a lone surrogate as ``\\ud800``."""
    return json.dumps(body).encode()


def _flows_app(harness: Harness, flows: RecordingFlows) -> Any:
    return harness.app(flows=("signup",), start_run=flows.start, run_control=flows.control)


# ------------------------------------------------------------------------------------------ item 6: sizes
async def test_a_body_over_the_limit_is_413_everywhere_a_body_is_read(harness: Harness) -> None:
    flows = RecordingFlows("gen")
    too_big = b'{"binding":"MAIL","payload":"' + b"x" * MAX_BODY_BYTES + b'"}'
    async with harness.client(_flows_app(harness, flows)) as client:
        for path in BODY_PATHS:
            response = await client.post(path, content=too_big)
            assert (response.status_code, response.json()) == (
                413,
                {"error": f"body must not exceed {MAX_BODY_BYTES} bytes"},
            ), path
    assert harness.enqueued == [] and harness.shards.calls == [] and flows.started == []


async def test_a_payload_over_the_limit_is_413_and_one_at_it_is_accepted(harness: Harness) -> None:
    at_limit = "x" * (MAX_PAYLOAD_BYTES - 2)  # its JSON text has the two quotes too
    async with harness.client() as client:
        accepted = await client.post("/api/jobs", json={"binding": "MAIL", "payload": at_limit})
        refused = await client.post("/api/jobs", json={"binding": "MAIL", "payload": at_limit + "x"})
        # numbers print longer than they are written: 1e20 is 21 characters of JSON (J-3)
        grown = await client.post(
            "/api/jobs", content=b'{"binding":"MAIL","payload":[' + b"1e20," * 6_000 + b"0]}"
        )
    assert accepted.status_code == 201
    message = f"payload must not exceed {MAX_PAYLOAD_BYTES} bytes as JSON, got {MAX_PAYLOAD_BYTES + 1} bytes"
    assert (refused.status_code, refused.json()) == (413, {"error": message})
    assert grown.status_code == 413 and str(MAX_PAYLOAD_BYTES) in grown.json()["error"]
    assert len(harness.enqueued) == 1


async def test_the_original_errors_come_before_the_size_check(harness: Harness) -> None:
    # first failure wins; the size check is the last step
    async with harness.client() as client:
        response = await client.post(
            "/api/jobs", json={"binding": "MAIL", "payload": "x" * MAX_PAYLOAD_BYTES, "priority": "1"}
        )
    assert (response.status_code, response.json()) == (400, {"error": "priority must be a number"})


def _in_process() -> Harness:
    database = SqliteDatabase(":memory:")
    apply_migrations(database)
    return make_harness(database)


async def test_a_huge_streamed_body_is_refused_without_being_read() -> None:
    # ADR-0133: read chunk by chunk, refused once over the limit; the rest is never pulled
    harness = _in_process()
    chunk = b"x" * 65_536
    pulled = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal pulled
        yield b'{"binding":"MAIL","payload":"'
        for _ in range(800):  # 50 MiB
            pulled += 1
            yield chunk

    async with harness.client() as client:
        response = await client.post("/api/jobs", content=body())
    assert response.status_code == 413
    assert pulled <= MAX_BODY_BYTES // len(chunk) + 2
    assert harness.enqueued == []


async def test_a_declared_length_over_the_limit_is_refused_at_once() -> None:
    harness = _in_process()  # in process: an HTTP client will not send fewer bytes than it declares
    async with harness.client() as client:
        response = await client.post(
            "/api/jobs", content=b"{}", headers={**AUTH, "content-length": str(MAX_BODY_BYTES + 1)}
        )
    assert response.status_code == 413


# ----------------------------------------------------------------------------------------- item 3: numbers
@pytest.mark.parametrize("value", HUGE)
async def test_reschedule_numbers_reach_the_shard_clamped(harness: Harness, value: float) -> None:
    async with harness.client() as client:
        for body in ({"runAt": value}, {"runAt": -value}, {"delayMs": value, "priority": value}):
            response = await client.post(RESCHEDULE, content=_raw({**body, "priority": -value}))
            assert response.status_code == 410, response.text  # the recording shard has no such job
    recorded = [call[1][2:] for call in harness.shards.calls]
    assert recorded == [
        (MAX_INSTANT_MS, -MAX_SAFE_INTEGER),
        (-MAX_INSTANT_MS, -MAX_SAFE_INTEGER),
        (NOW + MAX_DURATION_MS, -MAX_SAFE_INTEGER),
    ]


async def test_ordinary_reschedule_numbers_pass_unchanged(harness: Harness) -> None:
    async with harness.client() as client:
        await client.post(RESCHEDULE, json={"runAt": NOW + 5, "priority": 2.5})
        await client.post(RESCHEDULE, json={"delayMs": 7, "priority": -3})
    assert [call[1][2:] for call in harness.shards.calls] == [(NOW + 5, 2.5), (NOW + 7, -3)]


@pytest.mark.parametrize("value", HUGE)
async def test_a_huge_run_deadline_is_clamped(harness: Harness, value: float) -> None:
    flows = RecordingFlows("gen")
    async with harness.client(_flows_app(harness, flows)) as client:
        response = await client.post(
            "/api/runs", content=_raw({"flow": "signup", "input": 1, "deadlineMs": value})
        )
    assert response.status_code == 201
    assert flows.started == [("signup", 1, None, MAX_DURATION_MS)]


@pytest.mark.parametrize("value", [*HUGE, *(-v for v in HUGE)])
async def test_bulk_bounds_beyond_every_instant_select_as_they_would(harness: Harness, value: float) -> None:
    await harness.add_jobs(job("MAIL#0:f1", state="FAILED"))
    async with harness.client() as client:
        since = await client.post("/api/jobs/bulk-retry", content=_raw({"created_from": value}))
        until = await client.post("/api/jobs/bulk-retry", content=_raw({"created_to": value}))
        limited = await client.post("/api/jobs/bulk-retry", content=_raw({"limit": abs(value)}))
        listed = await client.get("/api/jobs", params={"created_from": str(value), "created_to": str(value)})
    hit = {"ok": [], "failed": [{"id": "MAIL#0:f1", "reason": "gone"}], "remaining": 0}
    miss = {"ok": [], "failed": [], "remaining": 0}
    assert since.json() == (miss if value > 0 else hit)
    assert until.json() == (hit if value > 0 else miss)
    assert limited.json() == hit
    assert listed.json() == {"jobs": [], "total": 0}


# ----------------------------------------------------------------------------------------- item 3: strings
async def test_lone_surrogates_in_bodies_answer_well_formed_json(harness: Harness) -> None:
    # Python's json accepts "\ud800"; the answer escapes it as JSON.stringify does (ES2019)
    async with harness.client() as client:
        unknown = await client.post("/api/jobs", content=_raw({"binding": "\ud800", "payload": 1}))
        bulk = await client.post("/api/jobs/bulk-cancel", content=_raw({"ids": ["\ud800x"]}))
        filtered = await client.post(
            "/api/jobs/bulk-cancel", content=_raw({"binding": "\udfff", "unique_key": "\ud800"})
        )
        created = await client.post(
            "/api/jobs",
            content=_raw({"binding": "MAIL", "payload": {"\ud800": "\udc00"}, "uniqueKey": "k\ud800"}),
        )
    assert unknown.status_code == 400 and unknown.content == b'{"error":"unknown binding: \\ud800"}'
    assert bulk.status_code == 200 and b'"id":"\\ud800x"' in bulk.content
    assert filtered.json() == {"ok": [], "failed": [], "remaining": 0}
    assert created.status_code == 201
    assert harness.enqueued[-1]["payload"] == {"\ud800": "\udc00"}  # the app's enqueue stores it escaped


async def test_paths_with_escapes_that_are_not_utf8_are_not_found(harness: Harness) -> None:
    async with harness.client() as client:
        for path in ("/api/jobs/%ED%A0%80", "/api/runs/%ff", "/api/jobs/%C3"):
            response = await client.get(path)
            assert (response.status_code, response.json()) == (404, {"error": "not found"}), path
        retried = await client.post("/api/jobs/MAIL%230%3A%ED%A0%80/retry")
    assert (retried.status_code, retried.json()) == (400, {"error": "invalid job id"})


# ------------------------------------------------------------------------------------ item 4: a full store
async def test_a_full_store_is_a_json_503_without_a_traceback(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    async def full(env: Any, wire: dict[str, Any]) -> str:
        raise StorageFullError("storage is full: MAIL%230.sqlite3: database or disk is full")

    async with harness.client(harness.app(enqueue=full)) as client:
        answers = [await client.post("/api/jobs", json={"binding": "MAIL", "payload": 1}) for _ in range(3)]
    assert {(a.status_code, a.text) for a in answers} == {(503, '{"error":"storage is full"}')}
    assert not [r for r in caplog.records if r.name.startswith("tsumugi")]  # the store logs its episode


# --------------------------------------------------------------------------------------- item 7: routing
async def test_bare_api_is_under_the_api(harness: Harness) -> None:
    # the original's middlewares cover /api as well as /api/*
    app = harness.app(ui=lambda: UI)
    async with harness.client(app, headers={}) as client:
        for method in ("GET", "POST", "HEAD"):
            response = await client.request(method, "/api")
            assert response.status_code == 401, method
        assert (await client.get("/apix")).text == UI  # not under the API: no auth
    async with harness.client(app) as client:
        assert (await client.get("/api")).text == UI  # then the dashboard fallback
        assert (await client.post("/api")).text == "404 Not Found"
    async with harness.client(harness.app(check_bindings=lambda env: MISSING), headers={}) as client:
        assert (await client.get("/api")).status_code == 503  # before auth


MISSING = MissingBindingsReport("tsumugi: the wrangler configuration is incomplete", [])


async def test_routes_match_the_decoded_path(harness: Harness) -> None:
    # ADR-0133: as decodeURI, the router decodes every escape but those of delimiters and "%"
    await harness.add_jobs(job("MAIL#0:a1"))
    async with harness.client(harness.app(ui=lambda: UI)) as client:
        listed = await client.get("/api/%6aobs")
        detail = await client.get("/api/%6A%6F%62%73/MAIL%230%3Aa1")
        openapi = await client.get("/api/openapi%2Ejson")
        bulk = await client.post("/api/jobs/bulk%2Dcancel", json={"ids": ["MAIL#0:a1"]})
        twice = await client.get("/api/jobs/MAIL%25230%253Aa1")  # decoded once: the id is "MAIL%230%3Aa1"
        slashed = await client.post("/api/jobs/MAIL%230%3Aa1%2Fretry")  # an escaped "/" splits nothing
    async with harness.client(harness.app(ui=lambda: UI), headers={}) as client:
        not_api = await client.get("/api%2Fjobs")  # "/api%2Fjobs" is not under /api
        prefixed = await client.get("/%61pi/jobs")
    assert listed.json()["total"] == 1
    assert detail.json()["job"]["id"] == "MAIL#0:a1"
    assert openapi.json()["openapi"] == "3.1.0"
    assert bulk.json() == {"ok": [], "failed": [{"id": "MAIL#0:a1", "reason": "gone"}], "remaining": 0}
    assert (twice.status_code, twice.json()) == (404, {"error": "not found"})
    assert (slashed.status_code, slashed.text) == (404, "404 Not Found")
    assert (not_api.status_code, not_api.text) == (200, UI)
    assert prefixed.status_code == 401


@pytest.mark.parametrize("field", ["concurrency", "perKeyConcurrency", "reaperGraceMs"])
async def test_a_huge_policy_count_is_clamped_to_what_the_stores_hold(harness: Harness, field: str) -> None:
    # ADR-0133: 2**64 would reach SQL as a parameter Durable Object SQL and D1 refuse.
    async with harness.client(harness.app()) as client:
        answer = await client.post(
            "/api/bindings/MAIL/policy", json={field: 2**64, "rate": {"tokens": 1e300, "intervalMs": 5}}
        )
        assert answer.status_code == 200, answer.text
    patch = next(c[1][1] for c in harness.shards.calls if c[0] == "update_policy")
    assert patch[field] == MAX_SAFE_INTEGER and patch["rate"] == {"tokens": MAX_SAFE_INTEGER, "intervalMs": 5}
