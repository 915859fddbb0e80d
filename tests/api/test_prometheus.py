"""``GET /metrics`` over the recording harness (ADR-0139): the pipeline around it, 404/501, the series.

Rules: A-12..A-18 as they apply to ``/metrics``; M-2, M-3 for the metric points counted.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.api.rest_harness import AUTH, NOW, TOKEN, Harness, job
from tests.api.test_spec_pipeline import out_of_date

from tsumugi.api import MissingBindingsReport
from tsumugi.api.prometheus import CLIENT_MISSING, CONTENT_TYPE
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.storage.read_model_migrations import EXPECTED_MIGRATIONS
from tsumugi.storage.read_model_writer import HOUR_MS, KEPT_HOURS, D1ReadModelWriter, LocalMetricsWriter

HTML = "<!doctype html><title>Tsumugi</title>"
STARTED_AT = NOW - 60_000  # the runtime started a minute before NOW

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class FakeGauges:
    """``RuntimeGauges`` as a runtime would bind them."""

    depth: int = 7
    started_at_ms: int = STARTED_AT

    def queue_depth(self) -> int:
        return self.depth


def scraped(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def point(job_id: str, state: str, updated_at: int, attempts: int = 1, took_ms: int = 40) -> dict[str, Any]:
    """A terminal snapshot, written as one metric point (M-2); duration = updated_at - dispatched_at (M-3)."""
    return job(
        job_id, state=state, updated_at=updated_at, dispatched_at=updated_at - took_ms, attempts=attempts
    )


def served(harness: Harness, gauges: FakeGauges | None = None, **changes: Any) -> Any:
    found = gauges or FakeGauges()
    return harness.app(prometheus=lambda env: found, **changes)


async def test_without_runtime_gauges_metrics_is_an_unknown_path(harness: Harness) -> None:
    # ADR-0139: a Worker binds no gauges, so /metrics is any unknown non-API path.
    for resolver in (None, lambda env: None):
        async with harness.client(harness.app(prometheus=resolver, ui=lambda: HTML), headers={}) as client:
            page = await client.get("/metrics")
            assert (page.status_code, page.text) == (200, HTML)
            posted = await client.post("/metrics")
            assert (posted.status_code, posted.text) == (404, "404 Not Found")
        async with harness.client(harness.app(prometheus=resolver)) as client:
            response = await client.get("/metrics")
            assert (response.status_code, response.text) == (404, "404 Not Found")


async def test_metrics_are_behind_the_api_auth(harness: Harness) -> None:
    # ..A-81: the same middleware as /api, the dashboard fallback never shows instead.
    app = served(harness, ui=lambda: HTML)
    async with harness.client(app, headers={}) as client:
        bare = await client.get("/metrics")
        assert (bare.status_code, bare.json()) == (401, {"error": "unauthorized"})
        wrong = await client.get("/metrics", headers={"authorization": "Bearer wrong-token"})
        assert (wrong.status_code, wrong.json()) == (401, {"error": "unauthorized"})
        cookie = await client.get("/metrics", headers={"cookie": f"tsumugi_token={TOKEN}"})
        assert cookie.status_code == 200
        bearer = await client.get("/metrics", headers=AUTH)
        assert (bearer.status_code, bearer.headers["content-type"]) == (200, CONTENT_TYPE)
        posted = await client.post("/metrics")
        assert posted.status_code == 401  # auth before the method is judged, as under /api
        posted = await client.post("/metrics", headers=AUTH)
        assert (posted.status_code, posted.text) == (404, "404 Not Found")
        head = await client.head("/metrics", headers=AUTH)
        assert (head.status_code, head.content) == (200, b"")
        for path in ("/metrics/", "/metricsx", "/api/metrics/"):
            assert (await client.get(path, headers=AUTH)).text == HTML, path


async def test_no_auth_configured_hides_metrics(harness: Harness) -> None:
    # fail-closed before anything else.
    async with harness.client(served(harness, auth=None)) as client:
        response = await client.get("/metrics")
    assert (response.status_code, response.text) == (404, "not found")


async def test_binding_check_and_migration_gate_apply(harness: Harness) -> None:
    # missing bindings answer 503 even before auth; A-16: then the migration check.
    report = MissingBindingsReport("tsumugi: the wrangler configuration is incomplete", [{"binding": "X"}])
    async with harness.client(served(harness, check_bindings=lambda env: report), headers={}) as client:
        response = await client.get("/metrics")
    assert (response.status_code, response.json()) == (
        503,
        {"error": report.message, "missing": [{"binding": "X"}]},
    )
    harness.env.TSUMUGI_DB = SqliteDatabase(":memory:")
    async with harness.client(served(harness)) as client:
        response = await client.get("/metrics")
    assert (response.status_code, response.json()) == (503, out_of_date(EXPECTED_MIGRATIONS))
    assert harness.shards.calls == []


async def test_without_prometheus_client_the_answer_is_501(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ADR-0139: the optional extra is missing; auth still comes first.
    for name in [name for name in sys.modules if name.split(".")[0] == "prometheus_client"]:
        monkeypatch.setitem(sys.modules, name, None)
    async with harness.client(served(harness), headers={}) as client:
        assert (await client.get("/metrics")).status_code == 401
        response = await client.get("/metrics", headers=AUTH)
    assert (response.status_code, response.json()) == (501, {"error": CLIENT_MISSING})
    assert "prometheus-client" in CLIENT_MISSING and "tsumugi[prometheus]" in CLIENT_MISSING


async def test_series_from_read_model_shards_and_runtime(harness: Harness) -> None:
    await harness.add_jobs(
        job("MAIL#0:a1"), job("MAIL#0:f1", state="FAILED"), job("SMS#0:c1", state="COMPLETED"), job("OLD#0:x")
    )
    await D1ReadModelWriter(harness.db).upsert_runs(
        [{"id": "signup:a", "seq": 1, "flow": "signup", "state": "COMPLETED", "input": {}, "node_total": 1,
          "node_done": 1, "node_failed": 0, "created_at": 10, "updated_at": 20, "parent_run_id": None,
          "parent_node_id": None}]
    )  # fmt: skip
    await LocalMetricsWriter(harness.db).write(
        [
            point("SMS#0:c1", "COMPLETED", NOW - 1_000, took_ms=40),
            point("SMS#0:c2", "COMPLETED", NOW - 2_000, took_ms=3_000, attempts=2),
            point("MAIL#0:f1", "FAILED", NOW - 3_000, took_ms=0, attempts=3),
            point("MAIL#0:early", "COMPLETED", STARTED_AT - 1, took_ms=10),  # before the runtime started
        ]
    )
    async with harness.client(served(harness, flows=("signup",))) as client:
        response = await client.get("/metrics")
    samples = scraped(response.text)
    # Jobs by binding and state: every registered binding in every state, plus what the read model holds.
    assert value(samples, "tsumugi_jobs", binding="MAIL", state="SCHEDULED") == 1
    assert value(samples, "tsumugi_jobs", binding="MAIL", state="FAILED") == 1
    assert value(samples, "tsumugi_jobs", binding="SMS", state="COMPLETED") == 1
    assert value(samples, "tsumugi_jobs", binding="SMS", state="RUNNING") == 0
    assert value(samples, "tsumugi_jobs", binding="OLD", state="SCHEDULED") == 1
    assert value(samples, "tsumugi_runs", flow="signup", state="COMPLETED") == 1
    assert value(samples, "tsumugi_runs", flow="signup", state="RUNNING") == 0
    # Settled jobs and attempts since the runtime started; MAIL#0:early is before it.
    assert value(samples, "tsumugi_jobs_settled_total", binding="SMS", state="COMPLETED") == 2
    assert value(samples, "tsumugi_attempts_total", binding="SMS", state="COMPLETED") == 3
    assert value(samples, "tsumugi_jobs_settled_total", binding="MAIL", state="FAILED") == 1
    assert value(samples, "tsumugi_attempts_total", binding="MAIL", state="FAILED") == 3
    assert value(samples, "tsumugi_jobs_settled_total", binding="MAIL", state="COMPLETED") == 0
    # The last attempt's duration, in seconds: 0.04 and 3.0 for SMS.
    sms = {"binding": "SMS", "state": "COMPLETED"}
    assert value(samples, "tsumugi_attempt_duration_seconds_count", **sms) == 2
    assert value(samples, "tsumugi_attempt_duration_seconds_sum", **sms) == pytest.approx(3.04)
    assert value(samples, "tsumugi_attempt_duration_seconds_bucket", **sms, le="0.025") == 0
    assert value(samples, "tsumugi_attempt_duration_seconds_bucket", **sms, le="0.05") == 1
    assert value(samples, "tsumugi_attempt_duration_seconds_bucket", **sms, le="2.5") == 1
    assert value(samples, "tsumugi_attempt_duration_seconds_bucket", **sms, le="5.0") == 2
    assert value(samples, "tsumugi_attempt_duration_seconds_bucket", **sms, le="+Inf") == 2
    assert (
        value(samples, "tsumugi_attempt_duration_seconds_bucket", binding="MAIL", state="FAILED", le="0.005")
        == 1
    )
    # The runtime's own gauge, and shard 0's last tick (the recording shard reports a tokens block).
    assert value(samples, "tsumugi_queue_depth") == 7
    for binding in ("MAIL", "SMS"):
        assert value(samples, "tsumugi_policy_blocked", binding=binding, shard="0", reason="tokens") == 1
        for reason in ("pause", "capacity", "per_key", "per_key_tokens"):
            assert value(samples, "tsumugi_policy_blocked", binding=binding, shard="0", reason=reason) == 0
    assert sorted(harness.shards.calls) == [("diagnostics", ("MAIL#0",)), ("diagnostics", ("SMS#0",))]
    assert all(name.startswith("tsumugi_") for name, _ in samples)


async def test_counters_only_grow(harness: Harness) -> None:
    # ADR-0139: each point is counted once, however scrapes overlap, and pruning never takes one back.
    writer = LocalMetricsWriter(harness.db)
    await writer.write([point(f"SMS#0:a{n}", "COMPLETED", NOW - 1_000) for n in range(3)])
    app = served(harness)
    settled = {"binding": "SMS", "state": "COMPLETED"}
    async with harness.client(app) as client:
        first, second = await asyncio.gather(client.get("/metrics"), client.get("/metrics"))
        for response in (first, second):
            assert value(scraped(response.text), "tsumugi_jobs_settled_total", **settled) == 3
        # A point a month on prunes the three older ones from the table (ADR-0127).
        later = NOW + (KEPT_HOURS + 1) * HOUR_MS
        await writer.write([point("SMS#0:b1", "COMPLETED", later)])
        assert await harness.db.all("SELECT COUNT(*) AS n FROM tsumugi_metric") == [{"n": 1}]
        samples = scraped((await client.get("/metrics")).text)
    assert value(samples, "tsumugi_jobs_settled_total", **settled) == 4
    assert value(samples, "tsumugi_attempt_duration_seconds_count", **settled) == 4


async def test_each_runtime_counts_from_its_own_start(harness: Harness) -> None:
    await LocalMetricsWriter(harness.db).write([point("SMS#0:a1", "COMPLETED", NOW - 1_000)])
    settled = {"binding": "SMS", "state": "COMPLETED"}
    async with harness.client(served(harness, FakeGauges(started_at_ms=NOW))) as client:
        samples = scraped((await client.get("/metrics")).text)
    assert value(samples, "tsumugi_jobs_settled_total", **settled) == 0
    async with harness.client(served(harness, FakeGauges(started_at_ms=NOW - 2_000))) as client:
        samples = scraped((await client.get("/metrics")).text)
    assert value(samples, "tsumugi_jobs_settled_total", **settled) == 1
