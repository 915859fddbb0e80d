"""Diagnostics, binding policy and metrics (A-24, A-55, A-66..A-68, J-176, J-185, M-2..M-11)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from tests.api.rest_harness import NOW, Harness, job

from tsumugi.api import BindingOptions
from tsumugi.errors import MetricsUpstreamError
from tsumugi.storage.metrics_reader import LocalMetricsReader
from tsumugi.storage.read_model_writer import LocalMetricsWriter

HOUR_MS = 3_600_000


async def test_diagnostics_asks_shard_zero_of_each_binding(harness: Harness, api: httpx.AsyncClient) -> None:
    # A-55, J-185: registration order, shard 0 only, booleans in blocked, live (not from D1).
    app = harness.app(performers=("SMS", "MAIL"), bindings={"SMS": BindingOptions(shards=4)})
    async with harness.client(app) as client:
        response = await client.get("/api/diagnostics")
    assert response.text == (
        '{"shard":0,"bindings":{"SMS":{"active":2,"outbox":1,"blocked":{"capacity":false,"tokens":true,'
        '"perKey":false}},"MAIL":{"active":2,"outbox":1,"blocked":{"capacity":false,"tokens":true,"perKey":false}}}}'
    )
    assert [c[1] for c in harness.shards.calls] == [("SMS#0",), ("MAIL#0",)]
    async with harness.client(harness.app(performers=())) as client:
        assert (await client.get("/api/diagnostics")).json() == {"shard": 0, "bindings": {}}


async def test_policy_patch_goes_to_every_shard(harness: Harness) -> None:
    # J-176: merge patch to every shard of the binding; returns settings and shard count.
    app = harness.app(
        bindings={"MAIL": BindingOptions(shards=3, static_settings={"policy": {"concurrency": 7}})}
    )
    async with harness.client(app) as client:
        response = await client.post("/api/bindings/MAIL/policy", json={"paused": True, "concurrency": 5})
        assert response.status_code == 200
        assert response.json() == {
            "ok": True,
            "settings": {"policy": {"concurrency": 5, "paused": True}},
            "shards": 3,
        }
        reset = await client.post("/api/bindings/MAIL/policy/reset")
        assert reset.json() == {"ok": True, "settings": {"policy": {"concurrency": 100}}, "shards": 3}
    calls = harness.shards.calls
    assert [c[1][0] for c in calls if c[0] == "update_policy"] == ["MAIL#0", "MAIL#1", "MAIL#2"]
    # ADR-0131: the static settings go along, for a shard that no enqueue reached yet (issue 13 item 5)
    assert {str(c[1][2]) for c in calls if c[0] == "update_policy"} == {"{'policy': {'concurrency': 7}}"}
    assert next(c[1] for c in calls if c[0] == "reset_policy") == ("MAIL#0", {"policy": {"concurrency": 7}})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "body must be an object"),
        ({}, "body must contain at least one policy field"),
        ({"paused": "yes"}, "paused must be a boolean"),
        ({"concurrency": -1}, "concurrency must be a non-negative integer"),
        ({"perKeyConcurrency": 1.5}, "perKeyConcurrency must be a non-negative integer"),
        ({"reaperGraceMs": None}, "reaperGraceMs must be a non-negative integer"),
        ({"rate": 5}, "rate must be an object or null"),
        ({"rate": {"tokens": 0, "intervalMs": 1}}, "rate.tokens must be a positive integer"),
        ({"perKeyRate": {"tokens": 1}}, "perKeyRate.intervalMs must be a positive integer"),
        ({"agingIntervalMs": "x"}, "agingIntervalMs must be a positive number or null"),
    ],
)
async def test_policy_validation(harness: Harness, api: httpx.AsyncClient, body: Any, message: str) -> None:
    response = await api.post("/api/bindings/MAIL/policy", content=json.dumps(body).encode())
    assert (response.status_code, response.json()) == (400, {"error": message})
    assert harness.shards.calls == []


async def test_policy_of_unknown_binding_is_404(harness: Harness, api: httpx.AsyncClient) -> None:
    for path in ("/api/bindings/NOPE/policy", "/api/bindings/NOPE/policy/reset"):
        response = await api.post(path, json={"paused": False})
        assert (response.status_code, response.json()) == (404, {"error": "unknown binding: NOPE"})


async def test_policy_null_rate_and_aging_clear_the_limit(harness: Harness, api: httpx.AsyncClient) -> None:
    body = {"rate": None, "agingIntervalMs": None, "perKeyRate": {"tokens": 2, "intervalMs": 1000}}
    assert (await api.post("/api/bindings/MAIL/policy", json=body)).status_code == 200
    assert harness.shards.calls[0][1][1] == body


class StubReader:
    def __init__(self, report: dict[str, Any] | Exception) -> None:
        self.report = report
        self.calls: list[tuple[int, str | None]] = []

    async def read(self, hours: int, binding: str | None) -> dict[str, Any]:
        self.calls.append((hours, binding))
        if isinstance(self.report, Exception):
            raise self.report
        return self.report


async def test_metrics_501_when_unconfigured_or_resolver_gives_nothing(
    harness: Harness, api: httpx.AsyncClient
) -> None:
    # checked before the query, resolver evaluated per request.
    for client_app in (None, harness.app(metrics=lambda env: None)):
        async with harness.client(client_app) as client:
            response = await client.get("/api/metrics?hours=-1")
            assert (response.status_code, response.json()) == (501, {"error": "metrics is not configured"})


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("hours=0", "hours must be at least 1"),
        ("hours=abc", "hours must be at least 1"),
        ("hours=-Infinity", "hours must be at least 1"),
        ("hours=Infinity", "hours must be at least 1"),
        ("hours=721", "hours must not exceed 720"),
        ("binding=1abc", "binding is not a valid name"),
        ("binding=a-b", "binding is not a valid name"),
    ],
)
async def test_metrics_query_validation(harness: Harness, query: str, message: str) -> None:
    #
    reader = StubReader({"bindings": [], "series": []})
    async with harness.client(harness.app(metrics=lambda env: reader)) as client:
        response = await client.get(f"/api/metrics?{query}")
    assert (response.status_code, response.json()) == (400, {"error": message})
    assert reader.calls == []


async def test_metrics_hours_default_and_floor(harness: Harness) -> None:
    # M-11
    reader = StubReader({"bindings": [], "series": []})
    async with harness.client(harness.app(metrics=lambda env: reader)) as client:
        assert (await client.get("/api/metrics?hours=")).json() == {"hours": 24, "bindings": [], "series": []}
        assert (await client.get("/api/metrics?hours=1.9&binding=MAIL")).json()["hours"] == 1
        assert (await client.get("/api/metrics?hours=720&binding=")).status_code == 200
    assert reader.calls == [(24, None), (1, "MAIL"), (720, None)]


async def test_metrics_upstream_failure_is_502(harness: Harness) -> None:
    # A-68, M-12
    reader = StubReader(MetricsUpstreamError("analytics engine did not respond within 10000ms"))
    async with harness.client(harness.app(metrics=lambda env: reader)) as client:
        response = await client.get("/api/metrics")
    assert (response.status_code, response.json()) == (
        502,
        {"error": "analytics engine did not respond within 10000ms"},
    )


async def test_local_metrics_end_to_end(harness: Harness) -> None:
    # M-2, M-3: one point per terminal snapshot; M-8, M-9, M-10 shapes; A-10 integers on the wire.
    writer = LocalMetricsWriter(harness.db)
    early = NOW - 2 * HOUR_MS
    written = await writer.write(
        [
            job("MAIL#0:a", state="COMPLETED", attempts=1, dispatched_at=early, updated_at=early + 100),
            job("MAIL#0:b", state="FAILED", attempts=3, dispatched_at=NOW - 30_000, updated_at=NOW - 29_700),
            job("MAIL#0:c", state="RUNNING", dispatched_at=NOW - 10),
            job("SMS#0:d", state="CANCELLED", attempts=0, dispatched_at=None, updated_at=NOW - 5),
            job("SMS#0:e", state="STALLED", attempts=1, dispatched_at=NOW, updated_at=NOW - 50),
        ]
    )  # fmt: skip
    assert written == 4
    reader = LocalMetricsReader(harness.db, harness.clock)
    async with harness.client(harness.app(metrics=lambda env: reader)) as client:
        response = await client.get("/api/metrics?hours=3")
        narrow = (await client.get("/api/metrics?hours=1&binding=MAIL")).json()
    body = response.json()
    assert body["hours"] == 3
    mail, sms = body["bindings"]
    assert mail == {"binding": "MAIL", "total": 2, "failed": 1, "failureRate": 0.5, "avgDurationMs": 200,
                    "maxDurationMs": 300, "p95DurationMs": 300, "avgAttempts": 2}  # fmt: skip
    assert sms == {"binding": "SMS", "total": 2, "failed": 1, "failureRate": 0.5, "avgDurationMs": 0,
                   "maxDurationMs": 0, "p95DurationMs": 0, "avgAttempts": 0.5}  # fmt: skip
    assert '"total":2,' in response.text and '"avgDurationMs":200,' in response.text
    hour = (NOW // HOUR_MS) * HOUR_MS
    assert [(p["at"], p["total"], p["failed"]) for p in body["series"]] == [
        (hour - 2 * HOUR_MS, 1, 0),
        (hour, 3, 2),
    ]
    assert narrow["bindings"] == [{**mail, "total": 1, "failed": 1, "failureRate": 1, "avgDurationMs": 300,
                                   "maxDurationMs": 300, "p95DurationMs": 300, "avgAttempts": 3}]  # fmt: skip
