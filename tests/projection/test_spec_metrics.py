"""Spec audit of metrics: data points, the Analytics Engine reader, the local stand-in and the REST side.

Rules: M-2..M-12, A-24, A-66..A-68 and the Appendix 1 texts they use.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from tests.api.rest_harness import AUTH, NOW, job, make_harness

from tsumugi.application.rest_surface import metrics_resolver
from tsumugi.clock import FixedClock
from tsumugi.projection.analytics_engine import (
    AnalyticsEngineWriter,
    analytics_data_point,
    analytics_engine_metrics,
)
from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.metrics_reader import LocalMetricsReader
from tsumugi.storage.read_model_writer import LocalMetricsWriter

HOUR_MS = 3_600_000
CREDENTIALS = {"accountId": "acc9", "apiToken": "secret", "dataset": "tsumugi_metrics"}
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "STALLED")


def test_one_point_per_terminal_snapshot_in_the_m3_layout() -> None:
    # M-2, M-3: indexes=[binding]; blobs=[state, binding, guarantee]; doubles=[attempts, duration].
    for state in TERMINAL:
        snapshot = job("SMS#1:x", state=state, attempts=4, dispatched_at=NOW - 75, updated_at=NOW,
                       guarantee="at-most-once")  # fmt: skip
        assert analytics_data_point(snapshot) == {
            "indexes": ["SMS"], "blobs": [state, "SMS", "at-most-once"], "doubles": [4, 75],
        }  # fmt: skip
    for state in ("SCHEDULED", "QUEUED", "RUNNING"):
        assert analytics_data_point(job(state=state, dispatched_at=NOW - 1, updated_at=NOW)) is None


async def test_fail_retry_complete_writes_two_points() -> None:
    # M-2: every terminal snapshot counts, so a failed then retried job appears twice.
    points: list[dict[str, Any]] = []
    history = [
        job(seq=1, state="QUEUED"), job(seq=2, state="RUNNING", dispatched_at=NOW - 9),
        job(seq=3, state="FAILED", attempts=1, dispatched_at=NOW - 9, updated_at=NOW - 4),
        job(seq=4, state="SCHEDULED", attempts=1), job(seq=5, state="RUNNING", attempts=1, dispatched_at=NOW),
        job(seq=6, state="COMPLETED", attempts=2, dispatched_at=NOW, updated_at=NOW + 6),
    ]  # fmt: skip
    assert await AnalyticsEngineWriter(points.append).write(history) == 2
    assert [(p["blobs"][0], p["doubles"]) for p in points] == [("FAILED", [1, 5]), ("COMPLETED", [2, 6])]


async def test_write_failures_log_the_catalogue_text(caplog: pytest.LogCaptureFixture) -> None:
    # M-4: logged and swallowed on both writers; the local one keeps answering 0 and never raises.
    def broken(point: dict[str, Any]) -> None:
        raise RuntimeError("dataset gone")

    class BrokenDb:
        async def all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
            raise RuntimeError("disk I/O error")

        async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
            raise RuntimeError("disk I/O error")

        async def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
            raise RuntimeError("disk I/O error")

    done = [job(state="COMPLETED", dispatched_at=NOW - 1, updated_at=NOW)]
    with caplog.at_level(logging.ERROR, logger="tsumugi"):
        assert await AnalyticsEngineWriter(broken).write(done) == 0
        assert await LocalMetricsWriter(BrokenDb()).write(done) == 0
    assert [r.getMessage() for r in caplog.records] == ["tsumugi: writeMetrics failed"] * 2


class SqlApi:
    """A fake SQL API: answers the per-binding query and the series query, records what was sent."""

    def __init__(self, bindings: Any = None, series: Any = None, failure: Any = None) -> None:
        self.answers = {"binding": bindings or {"data": []}, "series": series or {"data": []}}
        self.failure = failure
        self.sent: list[tuple[str, dict[str, str], str, float]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def __call__(
        self, url: str, headers: Mapping[str, str], body: str, timeout_s: float
    ) -> tuple[int, str]:
        self.sent.append((url, dict(headers), body, timeout_s))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        for _ in range(3):
            await asyncio.sleep(0)
        self.in_flight -= 1
        if isinstance(self.failure, BaseException):
            raise self.failure
        if self.failure is not None:
            status, text = self.failure
            return int(status), str(text)
        kind = "series" if "toStartOfInterval" in body else "binding"
        return 200, json.dumps(self.answers[kind])

    def body(self, kind: str) -> str:
        return next(b for _, _, b, _ in self.sent if ("toStartOfInterval" in b) == (kind == "series"))


def _reader(api: SqlApi) -> Any:
    reader = analytics_engine_metrics(lambda env: CREDENTIALS, post=api)(None)
    assert reader is not None
    return reader


async def test_two_concurrent_posts_with_the_m7_request() -> None:
    # M-7: both queries in flight together; URL, headers, plain SQL body, ten seconds each.
    api = SqlApi()
    await _reader(api).read(24, None)
    assert api.most_in_flight == 2 and len(api.sent) == 2
    for url, headers, _, timeout_s in api.sent:
        assert url == "https://api.cloudflare.com/client/v4/accounts/acc9/analytics_engine/sql"
        assert headers == {"authorization": "Bearer secret", "content-type": "text/plain"}
        assert timeout_s == 10


async def test_sql_window_filter_and_weighting() -> None:
    # M-8: window and optional blob2 filter on both; every aggregate weighted by _sample_interval.
    api = SqlApi()
    await _reader(api).read(7, "MAIL")
    window = "FROM tsumugi_metrics WHERE timestamp > NOW() - INTERVAL '7' HOUR AND blob2 = 'MAIL'"
    per_binding, series = api.body("binding"), api.body("series")
    failed = "SUM(IF(blob1 IN ('FAILED', 'STALLED'), _sample_interval, 0)) AS failed"
    avg_duration = "SUM(double2 * _sample_interval) / SUM(_sample_interval) AS avg_duration"
    for sql in (per_binding, series):
        assert window in sql and "SUM(_sample_interval) AS total" in sql
        assert failed in sql and avg_duration in sql
    assert per_binding.startswith("SELECT blob2 AS binding, ")
    for part in ("SUM(double1 * _sample_interval) / SUM(_sample_interval) AS avg_attempts",
                 "quantileWeighted(0.95, double2, _sample_interval) AS p95_duration",
                 "MAX(double2) AS max_duration", "GROUP BY binding ORDER BY total DESC"):  # fmt: skip
        assert part in per_binding
    assert series.startswith("SELECT toStartOfInterval(timestamp, INTERVAL '1' HOUR) AS at, ")
    assert "GROUP BY at ORDER BY at ASC" in series and "double1" not in series
    api = SqlApi()
    await _reader(api).read(720, None)
    assert all("blob2 =" not in body and "INTERVAL '720' HOUR" in body for _, _, body, _ in api.sent)


async def test_answer_parsing_numbers_rates_and_hours() -> None:
    # M-9: strings or numbers parse, anything else is 0, failureRate 0 at total 0; M-10: UTC hour text.
    rows = [
        {"binding": "MAIL", "total": 8, "failed": "2", "avg_duration": "10.5", "max_duration": 30,
         "p95_duration": "29", "avg_attempts": "1.25"},
        {"binding": "SMS", "total": "0", "failed": "0", "avg_duration": "nan", "max_duration": None,
         "p95_duration": "", "avg_attempts": [1]},
    ]  # fmt: skip
    series = [{"at": "2026-01-01 00:00:00", "total": "3", "failed": "0", "avg_duration": "4"},
              {"at": "2026-01-01T01:00:00Z", "total": "1", "failed": "1", "avg_duration": "0"}]  # fmt: skip
    report = await _reader(SqlApi({"data": rows}, {"data": series})).read(3, None)
    assert report["bindings"] == [
        {"binding": "MAIL", "total": 8, "failed": 2, "failureRate": 0.25, "avgDurationMs": 10.5,
         "maxDurationMs": 30, "p95DurationMs": 29, "avgAttempts": 1.25},
        {"binding": "SMS", "total": 0, "failed": 0, "failureRate": 0, "avgDurationMs": 0, "maxDurationMs": 0,
         "p95DurationMs": 0, "avgAttempts": 0},
    ]  # fmt: skip
    assert [p["at"] for p in report["series"]] == [1_767_225_600_000, None]


def _client(harness: Any, resolver: Any, raise_errors: bool = True) -> httpx.AsyncClient:
    app = harness.app(metrics=resolver)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_errors)
    return httpx.AsyncClient(transport=transport, base_url="http://tsumugi.test", headers=AUTH)


@pytest.fixture
def harness() -> Any:
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    return make_harness(db)


async def test_rest_over_the_analytics_engine_reader(harness: Any) -> None:
    # M-11: floored hours reach the SQL and echo back; M-10 [Q]: an unparsable hour is null.
    api = SqlApi({"data": [{"binding": "MAIL", "total": "2", "failed": "2", "avg_duration": "5",
                            "max_duration": "6", "p95_duration": "6", "avg_attempts": "3"}]},
                 {"data": [{"at": "soon", "total": "2", "failed": "2", "avg_duration": "5"}]})  # fmt: skip
    async with _client(harness, analytics_engine_metrics(lambda env: CREDENTIALS, post=api)) as client:
        response = await client.get("/api/metrics?hours=2.99&binding=MAIL")
    assert response.status_code == 200
    assert response.text == (
        '{"hours":2,"bindings":[{"binding":"MAIL","total":2,"failed":2,"failureRate":1,"avgDurationMs":5,'
        '"maxDurationMs":6,"p95DurationMs":6,"avgAttempts":3}],'
        '"series":[{"at":null,"total":2,"failed":2,"avgDurationMs":5}]}'
    )
    assert all("INTERVAL '2' HOUR AND blob2 = 'MAIL'" in body for _, _, body, _ in api.sent)


async def test_rest_501_and_400_send_nothing_upstream(harness: Any) -> None:
    # a resolver that gives nothing for this env -> 501 before the query; A-66: 400s before any POST.
    api = SqlApi()
    asked: list[Any] = []

    def resolve(env: Any) -> dict[str, str] | None:
        asked.append(env)
        return None if len(asked) == 1 else CREDENTIALS

    async with _client(harness, analytics_engine_metrics(resolve, post=api)) as client:
        first = await client.get("/api/metrics?hours=0")
        assert (first.status_code, first.text) == (501, '{"error":"metrics is not configured"}')
        refusals = (("hours=0.5", "hours must be at least 1"), ("hours=721", "hours must not exceed 720"),
                    ("binding=a.b", "binding is not a valid name"))  # fmt: skip
        for query, text in refusals:
            answer = await client.get(f"/api/metrics?{query}")
            assert (answer.status_code, answer.text) == (
                400,
                json.dumps({"error": text}, separators=(",", ":")),
            )
    assert api.sent == [] and len(asked) == 4


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ((401, "y" * 501), "y" * 500),
        ((429, ""), "analytics engine returned 429"),
        (TimeoutError(), "analytics engine did not respond within 10000ms"),
    ],
)
async def test_rest_upstream_refusal_is_502(harness: Any, failure: Any, message: str) -> None:
    # M-12, A-68: first 500 characters, or the status text, or the timeout text; all 502 {"error"}.
    resolver = analytics_engine_metrics(lambda env: CREDENTIALS, post=SqlApi(failure=failure))
    async with _client(harness, resolver) as client:
        response = await client.get("/api/metrics")
    assert (response.status_code, response.json()) == (502, {"error": message})


async def test_rest_network_exception_is_500(harness: Any) -> None:
    # A-68 [I]: failures other than a refusal or timeout are plain 500s.
    resolver = analytics_engine_metrics(
        lambda env: CREDENTIALS, post=SqlApi(failure=ConnectionError("reset"))
    )
    async with _client(harness, resolver, raise_errors=False) as client:
        response = await client.get("/api/metrics")
    assert (response.status_code, response.text) == (500, "Internal Server Error")


async def test_local_metrics_window_order_and_p95(harness: Any) -> None:
    # M-8 locally: `at > now - hours`, binding filter, per-binding order by total descending, nearest-rank p95
    # over the window; M-9 shapes; M-10 series by hour start ascending.
    db = harness.db
    edge = NOW - 2 * HOUR_MS
    mail = [job(f"MAIL#0:m{i}", state="COMPLETED", attempts=1, dispatched_at=NOW - 60_000 - i,
                updated_at=NOW - 60_000) for i in range(1, 21)]  # fmt: skip
    sms = [job("SMS#0:s1", state="STALLED", attempts=2, dispatched_at=NOW - 100, updated_at=NOW - 90)]
    outside = [job("SMS#0:old", state="FAILED", attempts=9, dispatched_at=edge - 500, updated_at=edge)]
    assert await LocalMetricsWriter(db).write(mail + sms + outside) == 22
    reader = LocalMetricsReader(db, harness.clock)
    report = await reader.read(2, None)
    assert [b["binding"] for b in report["bindings"]] == ["MAIL", "SMS"]
    assert report["bindings"][0] == {"binding": "MAIL", "total": 20, "failed": 0, "failureRate": 0,
                                     "avgDurationMs": 10.5, "maxDurationMs": 20, "p95DurationMs": 19,
                                     "avgAttempts": 1}  # fmt: skip
    assert report["bindings"][1] == {"binding": "SMS", "total": 1, "failed": 1, "failureRate": 1,
                                     "avgDurationMs": 10, "maxDurationMs": 10, "p95DurationMs": 10,
                                     "avgAttempts": 2}  # fmt: skip
    hour = (NOW - 60_000) // HOUR_MS * HOUR_MS
    assert report["series"] == [{"at": hour, "total": 21, "failed": 1, "avgDurationMs": 220 / 21}]
    wider = await reader.read(3, "SMS")
    assert [(b["binding"], b["total"], b["avgAttempts"]) for b in wider["bindings"]] == [("SMS", 2, 5.5)]
    assert [(p["at"], p["total"]) for p in wider["series"]] == [(edge // HOUR_MS * HOUR_MS, 1), (hour, 1)]


async def test_missing_data_is_empty_but_a_garbled_answer_is_500(harness: Any) -> None:
    # M-7: `data` missing or not an array -> empty; A-68 [I], ADR-0127: a 2xx body that is no JSON -> 500.
    for answer in ("{}", '{"data": null}', "[]", '{"data": "x"}'):
        assert await _reader(SqlApi(failure=(200, answer))).read(1, None) == {"bindings": [], "series": []}
    resolver = analytics_engine_metrics(lambda env: CREDENTIALS, post=SqlApi(failure=(200, "<html>")))
    async with _client(harness, resolver, raise_errors=False) as client:
        response = await client.get("/api/metrics")
    assert (response.status_code, response.text) == (500, "Internal Server Error")


async def test_null_binding_reads_as_empty_text() -> None:
    # M-9: BindingMetrics.binding is a string; a null from the API never turns into "None".
    rows = [{"binding": None, "total": "1", "failed": "0", "avg_duration": "1", "max_duration": "1",
             "p95_duration": "1", "avg_attempts": "1"}]  # fmt: skip
    report = await _reader(SqlApi({"data": rows})).read(1, None)
    assert report["bindings"][0]["binding"] == ""


async def test_local_points_beyond_the_widest_window_are_pruned(harness: Any) -> None:
    # ADR-0127: the local table keeps 720 hours (A-66's widest window) behind the newest point, far longer
    # than the read-model sweep's 7 days (M-5); nothing a query can still reach is dropped.
    db, writer = harness.db, LocalMetricsWriter(harness.db)
    kept_ms = 720 * HOUR_MS
    old = [job(f"MAIL#0:o{i}", state="COMPLETED", updated_at=NOW - kept_ms + i - 1) for i in range(2)]
    assert await writer.write(old) == 2
    assert await writer.write([job(state="FAILED", updated_at=NOW)]) == 1
    assert await db.all("SELECT at FROM tsumugi_metric ORDER BY at") == [{"at": NOW - kept_ms}, {"at": NOW}]
    report = await LocalMetricsReader(db, harness.clock).read(720, None)
    assert [(b["total"], b["failed"]) for b in report["bindings"]] == [(1, 1)]


def test_cloudflare_env_without_metrics_config_is_not_configured() -> None:
    # A-24, M-6: on Cloudflare nothing writes a local metrics table; without credentials the answer is 501.
    env = SimpleNamespace(TSUMUGI_DB=D1Database(object()))
    assert metrics_resolver(None, FixedClock(NOW))(env) is None
