"""Analytics Engine metrics: data points (M-2, M-3, M-4) and the SQL API reader (M-6..M-12, A-68)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from tests.api.rest_harness import job

from tsumugi.errors import MetricsUpstreamError
from tsumugi.projection.analytics_engine import (
    AnalyticsEngineWriter,
    analytics_data_point,
    analytics_engine_metrics,
)

CREDENTIALS = {"accountId": "acc123", "apiToken": "tok", "dataset": "tsumugi_jobs"}


def test_data_points_for_terminal_snapshots_only() -> None:
    # M-2, M-3
    done = job(state="COMPLETED", attempts=2, dispatched_at=100, updated_at=350, guarantee="at-most-once")
    assert analytics_data_point(done) == {
        "indexes": ["MAIL"], "blobs": ["COMPLETED", "MAIL", "at-most-once"], "doubles": [2, 250],
    }  # fmt: skip
    never_dispatched = analytics_data_point(job(state="CANCELLED", dispatched_at=None))
    assert never_dispatched is not None and never_dispatched["doubles"] == [0, 0]
    clock_skew = analytics_data_point(job(state="FAILED", dispatched_at=500, updated_at=400))
    assert clock_skew is not None and clock_skew["doubles"][1] == 0
    assert analytics_data_point(job(state="RUNNING")) is None


async def test_writer_swallows_failures() -> None:
    # M-4: a failing write is logged and the rest still go out.
    written: list[dict[str, Any]] = []

    def write(point: dict[str, Any]) -> None:
        if point["blobs"][0] == "FAILED":
            raise RuntimeError("dataset unavailable")
        written.append(point)

    count = await AnalyticsEngineWriter(write).write(
        [job(state="FAILED"), job(state="QUEUED"), job(state="COMPLETED", dispatched_at=1)]
    )
    assert count == 1 and [p["blobs"][0] for p in written] == ["COMPLETED"]


class FakeSqlApi:
    def __init__(self, answers: list[tuple[int, str] | Exception]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, str], str, float]] = []

    async def __call__(
        self, url: str, headers: Mapping[str, str], body: str, timeout_s: float
    ) -> tuple[int, str]:
        self.calls.append((url, dict(headers), body, timeout_s))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_reader_posts_two_weighted_queries_and_parses_strings() -> None:
    # M-7, M-8, M-9, M-10, M-11
    bindings = {"data": [{"binding": "MAIL", "total": "4", "failed": "1", "avg_duration": "12.5",
                          "max_duration": "40", "p95_duration": "38", "avg_attempts": "x"}]}  # fmt: skip
    series = {"data": [{"at": "2026-11-30 03:00:00", "total": "4", "failed": "1", "avg_duration": "12.5"},
                       {"at": "garbage", "total": "", "failed": None, "avg_duration": "1"}]}  # fmt: skip
    api = FakeSqlApi([(200, json.dumps(bindings)), (200, json.dumps(series))])
    reader = analytics_engine_metrics(lambda env: CREDENTIALS, post=api)(None)
    assert reader is not None
    report = await reader.read(6, "MAIL")
    assert report["bindings"] == [{"binding": "MAIL", "total": 4, "failed": 1, "failureRate": 0.25,
                                   "avgDurationMs": 12.5, "maxDurationMs": 40, "p95DurationMs": 38,
                                   "avgAttempts": 0}]  # fmt: skip
    assert report["series"][0] == {"at": 1_796_007_600_000, "total": 4, "failed": 1, "avgDurationMs": 12.5}
    assert report["series"][1]["at"] is None and report["series"][1]["total"] == 0
    url, headers, first, timeout_s = api.calls[0]
    assert url == "https://api.cloudflare.com/client/v4/accounts/acc123/analytics_engine/sql"
    assert headers == {"authorization": "Bearer tok", "content-type": "text/plain"} and timeout_s == 10
    for body in (first, api.calls[1][2]):
        assert "FROM tsumugi_jobs WHERE timestamp > NOW() - INTERVAL '6' HOUR AND blob2 = 'MAIL'" in body
        assert "_sample_interval" in body
    assert "GROUP BY binding ORDER BY total DESC" in first
    assert "toStartOfInterval(timestamp, INTERVAL '1' HOUR)" in api.calls[1][2]


async def test_no_binding_filter_and_missing_data() -> None:
    api = FakeSqlApi([(200, "{}"), (200, "[]")])
    reader = analytics_engine_metrics(lambda env: CREDENTIALS, post=api)(None)
    assert reader is not None
    assert await reader.read(24, None) == {"bindings": [], "series": []}
    assert "blob2 = " not in api.calls[0][2]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ((403, "x" * 600), "x" * 500),
        ((500, ""), "analytics engine returned 500"),
        (TimeoutError(), "analytics engine did not respond within 10000ms"),
    ],
)
async def test_upstream_failures_raise_for_a_502(answer: Any, message: str) -> None:
    # M-12
    api = FakeSqlApi([answer, (200, "{}")])
    reader = analytics_engine_metrics(lambda env: CREDENTIALS, post=api)(None)
    assert reader is not None
    with pytest.raises(MetricsUpstreamError) as failure:
        await reader.read(1, None)
    assert str(failure.value) == message


def test_resolver_without_credentials_means_not_configured() -> None:
    # evaluated per request; nothing -> 501.
    assert analytics_engine_metrics(lambda env: None)(None) is None
