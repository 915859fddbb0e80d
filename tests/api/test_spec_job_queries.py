"""Spec audit of the read endpoints' query parsing and exact bodies (A-6, A-10, A-28..A-37, A-54, A-56)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.api.rest_harness import NOW, Harness, job

EMPTY_LIST = '{"jobs":[],"total":0}'


@pytest.fixture
async def thirty(harness: Harness) -> Harness:
    """Jobs j00..j29: created one ms apart, updated in the same order."""
    await harness.add_jobs(
        *[job(f"MAIL#0:j{i:02d}", created_at=1_000 + i, updated_at=2_000 + i) for i in range(30)]
    )
    return harness


async def ids(api: httpx.AsyncClient, query: str) -> list[str]:
    response = await api.get(f"/api/jobs?{query}")
    assert response.status_code == 200, query
    return [row["id"] for row in response.json()["jobs"]]


@pytest.mark.parametrize(
    ("query", "count", "first"),
    [
        ("", 20, "j29"),
        ("limit=1000", 30, "j29"),  # capped at 100
        ("limit=0", 20, "j29"),
        ("limit=-5", 20, "j29"),  # port: below 1 is the default
        ("limit=abc", 20, "j29"),
        ("limit=", 20, "j29"),
        ("limit=2.7", 2, "j29"),  # port: floored
        ("limit=%201e0%20", 1, "j29"),  # JS Number(): whitespace and exponent
        ("limit=0x3", 3, "j29"),
        ("limit=Infinity", 30, "j29"),
        ("offset=-3", 20, "j29"),
        ("offset=abc", 20, "j29"),
        ("offset=25", 5, "j04"),
        ("offset=1.5&limit=1", 1, "j28"),
        ("offset=30", 0, None),
        ("limit=5&offset=5", 5, "j24"),
    ],
)
async def test_paging_parse(
    thirty: Harness, api: httpx.AsyncClient, query: str, count: int, first: str
) -> None:
    # limit = min(Number(limit) or 20, 100); offset = max(Number(offset) or 0, 0).
    response = await api.get(f"/api/jobs?{query}")
    body = response.json()
    assert len(body["jobs"]) == count
    assert body["total"] == 30  # total ignores paging
    assert (body["jobs"][0]["id"].split(":")[1] if body["jobs"] else None) == first


async def test_unknown_query_parameters_are_ignored(thirty: Harness, api: httpx.AsyncClient) -> None:
    # only the documented names filter; anything else changes nothing.
    assert await ids(api, "page=3&per_page=1&q=j01&payload=x") == await ids(api, "")


@pytest.mark.parametrize(
    "sort",
    [
        "UPDATED_AT",
        "Created_at",
        "payload",
        "constructor",
        "__proto__",
        "id",
        "created_at;DROP TABLE job",
        "",
    ],
)
async def test_sort_outside_the_allow_list_is_updated_at(
    harness: Harness, api: httpx.AsyncClient, sort: str
) -> None:
    # exact, case-sensitive allow-list; anything else silently sorts by updated_at, never 400/500.
    await harness.add_jobs(
        job("MAIL#0:x", created_at=1, updated_at=30), job("MAIL#0:y", created_at=2, updated_at=10),
        job("MAIL#0:z", created_at=3, updated_at=20),
    )  # fmt: skip
    response = await api.get("/api/jobs", params={"sort": sort})
    assert [r["id"] for r in response.json()["jobs"]] == ["MAIL#0:x", "MAIL#0:z", "MAIL#0:y"]


@pytest.mark.parametrize(("order", "ascending"), [("asc", True), ("ASC", False), ("desc", False), ("", False),
                                                  ("up", False), ("asc ", False)])  # fmt: skip
async def test_only_exact_asc_is_ascending(
    harness: Harness, api: httpx.AsyncClient, order: str, ascending: bool
) -> None:
    # A-28 order; A-30: the id tie-breaker is always descending.
    await harness.add_jobs(
        job("MAIL#0:a", priority=1), job("MAIL#0:b", priority=1), job("MAIL#0:c", priority=2)
    )
    found = [
        r["id"]
        for r in (await api.get("/api/jobs", params={"sort": "priority", "order": order})).json()["jobs"]
    ]
    expected = ["MAIL#0:b", "MAIL#0:a", "MAIL#0:c"] if ascending else ["MAIL#0:c", "MAIL#0:b", "MAIL#0:a"]
    assert found == expected


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"created_from": "1005", "created_to": "1006"}, ["j06", "j05"]),  # inclusive
        ({"created_from": " 1028 "}, ["j29", "j28"]),  # whitespace
        ({"created_to": "1.0005e3"}, ["j00"]),  # exponent
        ({"created_to": "0x3E9"}, ["j01", "j00"]),  # hex 1001
        ({"created_from": "soon", "created_to": ""}, None),  # ignored, never 400
        ({"created_from": "0", "created_to": "0"}, []),  # 0 is a real bound
    ],
)
async def test_created_bounds_follow_js_number(
    thirty: Harness, api: httpx.AsyncClient, bounds: dict[str, str], expected: list[str] | None
) -> None:
    # A-28 [Q]: Number() parsing; missing, empty or non-numeric bounds are ignored.
    response = await api.get("/api/jobs", params={**bounds, "limit": "100"})
    found = [r["id"].split(":")[1] for r in response.json()["jobs"]]
    assert found == (expected if expected is not None else [f"j{i:02d}" for i in range(29, -1, -1)])


async def test_exact_filters_and_empty_values(harness: Harness, api: httpx.AsyncClient) -> None:
    # exact match only (no prefix), empty = no filter, unknown state matches nothing.
    await harness.add_jobs(
        job("MAIL#0:k1", unique_key="order-1", concurrency_key="cust"),
        job("SMS#0:k2", state="FAILED", unique_key="order-10"),
    )
    assert await ids(api, "unique_key=order-1") == ["MAIL#0:k1"]
    assert await ids(api, "unique_key=order") == []
    assert await ids(api, "concurrency_key=cust&binding=MAIL") == ["MAIL#0:k1"]
    assert await ids(api, "id=SMS%230%3Ak2") == ["SMS#0:k2"]
    assert await ids(api, "id=SMS%230") == []
    assert sorted(await ids(api, "state=&binding=&id=&unique_key=&concurrency_key=")) == [
        "MAIL#0:k1",
        "SMS#0:k2",
    ]
    assert (await api.get("/api/jobs?state=failed")).text == EMPTY_LIST  # case-sensitive, exact body


async def test_detail_lookup_validates_nothing(api: httpx.AsyncClient) -> None:
    # any id is looked up as is; missing is 404 {"error":"not found"}.
    for path in (
        "/api/jobs/not-a-job-id",
        "/api/jobs/MAIL%230%3Anope",
        "/api/jobs/%20",
        "/api/jobs/bulk-cancel",
    ):
        response = await api.get(path)
        assert (response.status_code, response.text) == (404, '{"error":"not found"}'), path


async def test_detail_keeps_stored_attempt_fields_and_prints_integral_numbers(
    harness: Harness, api: httpx.AsyncClient
) -> None:
    # stored entries keep job_id; A-10: integral floats print as integers; A-11: JSON strings.
    entry = {"job_id": "MAIL#0:d1", "attempt": 2, "state": "FAILED", "started_at": NOW - 9,
             "finished_at": NOW - 1, "error": "boom"}  # fmt: skip
    await harness.add_jobs(job("MAIL#0:d1", state="FAILED", attempts=2, progress=1.0, attempts_log=[entry],
                               payload='{"n":1}', priority=3.0))  # fmt: skip
    response = await api.get("/api/jobs/MAIL%230%3Ad1")
    detail: dict[str, Any] = response.json()["job"]
    assert detail["attempts_log"] == [entry]
    assert detail["payload"] == '{"n":1}' and detail["result"] is None
    assert '"progress":1,' in response.text and '"priority":3,' in response.text


async def test_standalone_reads_fall_back_to_the_read_model(harness: Harness) -> None:
    # A-19 standalone use; A-56: no performer list -> distinct read-model bindings, sorted;
    # without a retention function FAILED is always retryable.
    await harness.add_jobs(
        job("ZED#0:a", state="FAILED", updated_at=1), job("ALPHA#0:b"), job("ZED#0:c", state="COMPLETED")
    )
    async with harness.client(harness.app(performers=None)) as client:
        assert (await client.get("/api/bindings")).text == '{"bindings":["ALPHA","ZED"]}'
        rows = (await client.get("/api/jobs?binding=ZED")).json()["jobs"]
    assert {r["id"]: r["retryable"] for r in rows} == {"ZED#0:a": True, "ZED#0:c": False}


async def test_stats_exact_body(harness: Harness, api: httpx.AsyncClient) -> None:
    # camelCase keys, only present states, age from the oldest SCHEDULED creation (not run_after).
    await harness.add_jobs(
        job("MAIL#0:s1", created_at=NOW - 70_000, run_after=NOW + 60_000),
        job("MAIL#0:s2", created_at=NOW - 1_000), job("MAIL#0:s3", state="STALLED", created_at=NOW - 999_999),
    )  # fmt: skip
    response = await api.get("/api/stats")
    assert response.json() == {"byState": {"SCHEDULED": 2, "STALLED": 1}, "oldestScheduledMs": 70_000}
    await harness.add_jobs(job("MAIL#0:s4", created_at=NOW + 5_000))  # clock skew: never negative
    await harness.db.run("DELETE FROM job WHERE id IN ('MAIL#0:s1', 'MAIL#0:s2')")
    assert (await api.get("/api/stats")).json()["oldestScheduledMs"] == 0
