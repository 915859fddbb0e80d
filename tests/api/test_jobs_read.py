"""Job list, detail, stats and bindings from the read model (A-28..A-37, A-54, A-56)."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.api.rest_harness import NOW, Harness, job

from tsumugi.storage.read_model_jobs import JobFilter, JobPage, list_jobs_sql

DAY_MS = 86_400_000


async def _ids(api: httpx.AsyncClient, query: str) -> list[str]:
    response = await api.get(f"/api/jobs?{query}")
    assert response.status_code == 200
    return [j["id"] for j in response.json()["jobs"]]


@pytest.fixture
async def seeded(harness: Harness) -> Harness:
    await harness.add_jobs(
        job("MAIL#0:a", state="SCHEDULED", created_at=100, updated_at=1_000, priority=5, unique_key="u1"),
        job("MAIL#0:b", state="FAILED", created_at=200, updated_at=NOW - DAY_MS, attempts=3),
        job("SMS#0:c", state="COMPLETED", created_at=300, updated_at=3_000, concurrency_key="k1"),
        job("SMS#0:d", state="STALLED", created_at=0, updated_at=NOW - 8 * DAY_MS),
        job("MAIL#0:e", state="RUNNING", created_at=500, updated_at=3_000),
    )
    return harness


async def test_default_listing_newest_update_first_with_id_tiebreak(
    seeded: Harness, api: httpx.AsyncClient
) -> None:
    # updated_at DESC, id DESC; total counts every match.
    response = await api.get("/api/jobs")
    body = response.json()
    assert [j["id"] for j in body["jobs"]] == ["MAIL#0:b", "SMS#0:d", "SMS#0:c", "MAIL#0:e", "MAIL#0:a"]
    assert body["total"] == 5


async def test_summary_has_exactly_the_ten_fields(seeded: Harness, api: httpx.AsyncClient) -> None:
    # never payload, result or attempts_log.
    summary = (await api.get("/api/jobs?id=MAIL%230:a")).json()["jobs"][0]
    assert set(summary) == {
        "id", "binding", "state", "priority", "attempts", "max_attempts",
        "created_at", "updated_at", "dispatched_at", "retryable",
    }  # fmt: skip
    assert summary["dispatched_at"] is None and summary["priority"] == 5


async def test_exact_match_filters_and_empty_means_none(seeded: Harness, api: httpx.AsyncClient) -> None:
    #
    assert await _ids(api, "state=FAILED") == ["MAIL#0:b"]
    assert await _ids(api, "state=failed") == []
    assert await _ids(api, "binding=SMS&sort=created_at&order=asc") == ["SMS#0:d", "SMS#0:c"]
    assert await _ids(api, "unique_key=u1") == ["MAIL#0:a"]
    assert await _ids(api, "concurrency_key=k1") == ["SMS#0:c"]
    assert await _ids(api, "unique_key=u") == []  # no prefix matching
    assert len(await _ids(api, "state=&binding=&id=&unique_key=&concurrency_key=")) == 5


async def test_created_bounds_are_inclusive_and_lenient(seeded: Harness, api: httpx.AsyncClient) -> None:
    # inclusive; 0 is a bound; non-numeric ignored; JS Number() forms accepted.
    assert set(await _ids(api, "created_from=200&created_to=300")) == {"MAIL#0:b", "SMS#0:c"}
    assert await _ids(api, "created_to=0") == ["SMS#0:d"]
    assert len(await _ids(api, "created_from=abc&created_to=")) == 5
    assert set(await _ids(api, "created_from=%200x12C%20")) == {"SMS#0:c", "MAIL#0:e"}  # 0x12C = 300
    assert set(await _ids(api, "created_from=3e2")) == {"SMS#0:c", "MAIL#0:e"}
    assert len(await _ids(api, "created_to=Infinity")) == 5


@pytest.mark.parametrize("sort", ["UPDATED_AT", "payload", "constructor", "id; DROP TABLE job", ""])
async def test_unknown_sort_falls_back_to_updated_at(
    seeded: Harness, api: httpx.AsyncClient, sort: str
) -> None:
    # never 400, never 500.
    assert (await _ids(api, f"sort={sort}"))[0] == "MAIL#0:b"


async def test_sort_columns_and_order(seeded: Harness, api: httpx.AsyncClient) -> None:
    # only "asc" ascends; the id tie-breaker stays descending.
    assert (await _ids(api, "sort=priority"))[0] == "MAIL#0:a"
    assert (await _ids(api, "sort=attempts&order=desc"))[0] == "MAIL#0:b"
    assert await _ids(api, "sort=updated_at&order=asc&binding=SMS") == ["SMS#0:c", "SMS#0:d"]
    assert (await _ids(api, "sort=created_at&order=ASC"))[0] == "MAIL#0:e"
    assert await _ids(api, "sort=state&order=asc") == [
        "SMS#0:c",
        "MAIL#0:b",
        "MAIL#0:e",
        "MAIL#0:a",
        "SMS#0:d",
    ]
    # equal updated_at (3000): id DESC both ways
    ties = await _ids(api, "sort=updated_at&order=asc&created_from=300&created_to=500")
    assert ties == ["SMS#0:c", "MAIL#0:e"]


async def test_paging_defaults_and_limits(harness: Harness, api: httpx.AsyncClient) -> None:
    # default 20, cap 100, 0/NaN/negative -> 20, fractional floored, offset >= 0.
    await harness.add_jobs(*(job(f"MAIL#0:p{i:03d}", updated_at=i) for i in range(130)))
    for query, expected in [("", 20), ("limit=0", 20), ("limit=x", 20), ("limit=-5", 20), ("limit=500", 100),
                            ("limit=2.9", 2), ("limit=7", 7)]:  # fmt: skip
        body = (await api.get(f"/api/jobs?{query}")).json()
        assert (len(body["jobs"]), body["total"]) == (expected, 130), query
    assert await _ids(api, "limit=2&offset=1") == ["MAIL#0:p128", "MAIL#0:p127"]
    assert await _ids(api, "limit=1&offset=-4") == ["MAIL#0:p129"]
    assert await _ids(api, "limit=1&offset=junk") == ["MAIL#0:p129"]
    assert await _ids(api, "offset=1000") == []


async def test_retryable_uses_each_bindings_failed_retention(seeded: Harness) -> None:
    # FAILED/STALLED inside failed_retention_ms (default 7 days), computed with the clock.
    from tsumugi.api import BindingOptions

    app = seeded.app(bindings={"SMS": BindingOptions(failed_retention_ms=10 * DAY_MS)})
    async with seeded.client(app) as api:
        flags = {j["id"]: j["retryable"] for j in (await api.get("/api/jobs")).json()["jobs"]}
    assert flags == {
        "MAIL#0:a": False,
        "MAIL#0:b": True,
        "SMS#0:c": False,
        "SMS#0:d": True,
        "MAIL#0:e": False,
    }
    async with seeded.client() as api:
        assert (await api.get("/api/jobs?id=SMS%230:d")).json()["jobs"][0]["retryable"] is False
    async with seeded.client(seeded.app(performers=None)) as api:  # standalone: always true
        assert (await api.get("/api/jobs?id=SMS%230:d")).json()["jobs"][0]["retryable"] is True


async def test_detail_has_eighteen_keys_and_json_strings(harness: Harness, api: httpx.AsyncClient) -> None:
    #
    log = [
        {
            "job_id": "MAIL#0:x",
            "attempt": 2,
            "state": "FAILED",
            "started_at": 5,
            "finished_at": 6,
            "error": "boom",
        }
    ]
    await harness.add_jobs(job("MAIL#0:x", state="FAILED", result=None, progress=0.5, attempts_log=log))
    detail = (await api.get("/api/jobs/MAIL%230:x")).json()["job"]
    assert len(detail) == 18
    assert detail["payload"] == '{"to":"a@example.com"}'
    assert detail["attempts_log"] == log
    assert detail["progress"] == 0.5 and detail["run_after"] == NOW
    assert "seq" not in detail and "run_id" not in detail
    raw = (await api.get("/api/jobs/MAIL#0:x".replace("#", "%23"))).text
    assert '"progress":0.5' in raw and '"max_attempts":3' in raw


async def test_detail_synthesises_a_completed_attempt(harness: Harness, api: httpx.AsyncClient) -> None:
    # only for COMPLETED with dispatched_at; a malformed log never fails the request.
    await harness.add_jobs(
        job("MAIL#0:c1", state="COMPLETED", attempts=0, dispatched_at=10, updated_at=20, result='{"n":1}'),
        job("MAIL#0:c2", state="FAILED", dispatched_at=10),
    )
    await harness.db.run("UPDATE job SET attempts_log = '{broken' WHERE id = 'MAIL#0:c1'")
    c1 = (await api.get("/api/jobs/MAIL%230:c1")).json()["job"]
    assert c1["attempts_log"] == [
        {"attempt": 1, "state": "COMPLETED", "started_at": 10, "finished_at": 20, "error": None}
    ]
    assert json.loads(c1["result"]) == {"n": 1}
    assert (await api.get("/api/jobs/MAIL%230:c2")).json()["job"]["attempts_log"] == []


async def test_missing_job_is_404_without_id_validation(api: httpx.AsyncClient) -> None:
    #
    for path in ("/api/jobs/MAIL%230:nope", "/api/jobs/not-an-id", "/api/jobs/%2F%2F"):
        response = await api.get(path)
        assert (response.status_code, response.json()) == (404, {"error": "not found"})


async def test_path_ids_are_percent_decoded(harness: Harness, api: httpx.AsyncClient) -> None:
    # "#" as %23, ":" raw or %3A.
    await harness.add_jobs(job("MAIL#0:z"))
    for path in ("/api/jobs/MAIL%230:z", "/api/jobs/MAIL%230%3Az", "/api/jobs/%4D%41%49%4C%230:z"):
        assert (await api.get(path)).status_code == 200, path


async def test_stats_counts_present_states_and_oldest_scheduled(
    seeded: Harness, api: httpx.AsyncClient
) -> None:
    # no zero entries; measured from created_at of SCHEDULED rows.
    body = (await api.get("/api/stats")).json()
    assert body == {
        "byState": {"SCHEDULED": 1, "FAILED": 1, "COMPLETED": 1, "STALLED": 1, "RUNNING": 1},
        "oldestScheduledMs": NOW - 100,
    }


async def test_bindings_lists_registered_names_sorted(seeded: Harness, api: httpx.AsyncClient) -> None:
    # registered performers (even never-run ones), else the read model's distinct bindings.
    async with seeded.client(seeded.app(performers=("Zeta", "MAIL", "Alpha"))) as client:
        assert (await client.get("/api/bindings")).json() == {"bindings": ["Alpha", "MAIL", "Zeta"]}
    async with seeded.client(seeded.app(performers=None)) as client:
        assert (await client.get("/api/bindings")).json() == {"bindings": ["MAIL", "SMS"]}


async def test_default_listing_is_index_backed(harness: Harness) -> None:
    # ADR-0062: the default page walks indexes only, never the whole table.
    for flt, page in [
        (JobFilter(), JobPage()),
        (JobFilter(), JobPage(ascending=True)),
        (JobFilter(states=("FAILED",)), JobPage()),
        (JobFilter(binding="MAIL"), JobPage()),
        (JobFilter(), JobPage(sort="created_at")),
    ]:
        sql, params = list_jobs_sql(flt, page)
        plan = " | ".join(str(r["detail"]) for r in await harness.db.all("EXPLAIN QUERY PLAN " + sql, params))
        assert "SCAN job " not in plan.replace("SCAN job USING INDEX", "INDEX") + " ", plan
        assert "USING INDEX" in plan, plan


async def test_numbers_print_like_javascript(harness: Harness, api: httpx.AsyncClient) -> None:
    # integral values without ".0"; A-39: a fractional priority (not enforced by REST) is listed as is.
    await harness.add_jobs(job("MAIL#0:f", priority=1.5, progress=1.0), job("MAIL#0:g", priority=2.0))
    listing = (await api.get("/api/jobs?sort=priority")).text
    assert '"priority":2,' in listing and '"priority":1.5,' in listing
    detail = (await api.get("/api/jobs/MAIL%230:f")).text
    assert '"progress":1,' in detail and '"priority":1.5,' in detail


async def test_a_repeated_query_parameter_uses_its_first_value(
    seeded: Harness, api: httpx.AsyncClient
) -> None:
    # like URLSearchParams.get in the original.
    assert await _ids(api, "state=FAILED&state=SCHEDULED") == ["MAIL#0:b"]
