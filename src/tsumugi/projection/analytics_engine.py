"""Metrics on Cloudflare: Analytics Engine data points and the SQL API reader.

HTTP goes through an injectable ``post`` so the Workers runtime can pass its own fetch; the default uses
httpx, imported only when called (ADR-0069).
"""
# M-1..M-5, M-6..M-12

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from tsumugi.core.json_types import JsonArray, JsonObject, JsonValue
from tsumugi.errors import MetricsUpstreamError
from tsumugi.storage.read_model_writer import metric_point

AE_TIMEOUT_MS: Final = 10_000  # M-7: each SQL call gets ten seconds
ERROR_TEXT_LIMIT: Final = 500  # M-12: the first 500 characters of an upstream refusal
SQL_API: Final = "https://api.cloudflare.com/client/v4/accounts/{account}/analytics_engine/sql"
_FAILED: Final = "blob1 IN ('FAILED', 'STALLED')"

Post = Callable[[str, Mapping[str, str], str, float], Awaitable[tuple[int, str]]]
_log = logging.getLogger("tsumugi")


def analytics_data_point(snapshot: Mapping[str, object]) -> JsonObject | None:
    """``indexes=[binding]``, ``blobs=[state, binding, guarantee]``, ``doubles=[attempts, duration]``."""
    # M-3
    point = metric_point(snapshot)
    if point is None:
        return None  # M-2: only terminal snapshots
    _, binding, state, guarantee, attempts, duration_ms = point
    return {"indexes": [binding], "blobs": [state, binding, guarantee], "doubles": [attempts, duration_ms]}


class AnalyticsEngineWriter:
    """Writes points through ``write_data_point`` (``TSUMUGI_METRICS.writeDataPoint``); never raises."""

    # M-4

    def __init__(self, write_data_point: Callable[[JsonObject], object]) -> None:
        self._write = write_data_point

    async def write(self, snapshots: Sequence[Mapping[str, object]]) -> int:
        written = 0
        for snapshot in snapshots:
            point = analytics_data_point(snapshot)
            if point is None:
                continue
            try:
                self._write(point)
                written += 1
            except Exception:  # M-4: logged and swallowed; the tick goes on
                _log.exception("tsumugi: writeMetrics failed")  # the catalogue text (jobs.md §11, M-4)
        return written


@dataclass(frozen=True)
class AnalyticsCredentials:
    """what the ``metrics`` resolver returns per request (``{accountId, apiToken, dataset}``)."""

    # M-6

    account_id: str
    api_token: str
    dataset: str


def _window(dataset: str, hours: int, binding: str | None) -> str:
    # M-8: the binding is safe to inline, the REST layer checked it against the name pattern.
    where = f"timestamp > NOW() - INTERVAL '{hours}' HOUR"
    if binding is not None:
        where += f" AND blob2 = '{binding}'"
    return f"FROM {dataset} WHERE {where}"


def bindings_sql(dataset: str, hours: int, binding: str | None) -> str:
    return (
        "SELECT blob2 AS binding, SUM(_sample_interval) AS total, "
        f"SUM(IF({_FAILED}, _sample_interval, 0)) AS failed, "
        "SUM(double2 * _sample_interval) / SUM(_sample_interval) AS avg_duration, "
        "MAX(double2) AS max_duration, quantileWeighted(0.95, double2, _sample_interval) AS p95_duration, "
        "SUM(double1 * _sample_interval) / SUM(_sample_interval) AS avg_attempts "
        f"{_window(dataset, hours, binding)} GROUP BY binding ORDER BY total DESC FORMAT JSON"
    )


def series_sql(dataset: str, hours: int, binding: str | None) -> str:
    return (
        "SELECT toStartOfInterval(timestamp, INTERVAL '1' HOUR) AS at, SUM(_sample_interval) AS total, "
        f"SUM(IF({_FAILED}, _sample_interval, 0)) AS failed, "
        "SUM(double2 * _sample_interval) / SUM(_sample_interval) AS avg_duration "
        f"{_window(dataset, hours, binding)} GROUP BY at ORDER BY at ASC FORMAT JSON"
    )


def _number(value: JsonValue) -> float:
    """the SQL API returns numbers as strings; anything non-numeric reads as 0."""
    # M-9
    if not isinstance(value, str | int | float):
        return 0.0  # null, an array or an object: no number
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _text(value: JsonValue) -> str:
    """the binding name as text; an absent or null one reads as empty, never as ``"None"``."""
    # M-9
    return "" if value is None else str(value)


def _hour_ms(text: JsonValue) -> float | None:
    """``YYYY-MM-DD HH:MM:SS`` in UTC -> epoch ms; unparsable -> None (JS NaN prints as null)."""
    # M-10
    try:
        moment = datetime.strptime(str(text), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return moment.timestamp() * 1000


async def _post_with_httpx(
    url: str, headers: Mapping[str, str], body: str, timeout_s: float
) -> tuple[int, str]:
    import httpx  # imported here: the Workers runtime passes its own fetch

    async with httpx.AsyncClient(timeout=timeout_s) as client:
        try:
            answer = await client.post(url, headers=dict(headers), content=body.encode("utf-8"))
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc)) from exc
        return answer.status_code, answer.text


class AnalyticsEngineReader:
    """``tsumugi.api.MetricsReader`` over the Analytics Engine SQL API."""

    # M-7..M-12

    def __init__(self, credentials: AnalyticsCredentials, post: Post | None = None) -> None:
        self._credentials = credentials
        self._post = post or _post_with_httpx

    async def _query(self, sql: str) -> list[JsonObject]:
        url = SQL_API.format(account=self._credentials.account_id)
        headers = {"authorization": f"Bearer {self._credentials.api_token}", "content-type": "text/plain"}
        try:
            status, text = await asyncio.wait_for(
                self._post(url, headers, sql, AE_TIMEOUT_MS / 1000), AE_TIMEOUT_MS / 1000
            )
        except TimeoutError as exc:
            raise MetricsUpstreamError(f"analytics engine did not respond within {AE_TIMEOUT_MS}ms") from exc
        if not 200 <= status < 300:
            raise MetricsUpstreamError(text[:ERROR_TEXT_LIMIT] or f"analytics engine returned {status}")
        # M-7: a missing `data` reads as empty; a 2xx body that is no JSON at all is an "other failure" and
        # surfaces as a 500 (A-68 [I], ADR-0127) rather than as an empty, healthy-looking report.
        answer: JsonValue = json.loads(text)
        data = answer.get("data") if isinstance(answer, dict) else None
        return [row for row in data if isinstance(row, dict)] if isinstance(data, list) else []

    async def read(self, hours: int, binding: str | None) -> JsonObject:
        dataset = self._credentials.dataset
        rows, series = await asyncio.gather(
            self._query(bindings_sql(dataset, hours, binding)),
            self._query(series_sql(dataset, hours, binding)),
        )
        bindings: JsonArray = []
        for row in rows:
            total, failed = _number(row.get("total")), _number(row.get("failed"))
            bindings.append(
                {
                    "binding": _text(row.get("binding")),
                    "total": total,
                    "failed": failed,
                    "failureRate": failed / total if total else 0,
                    "avgDurationMs": _number(row.get("avg_duration")),
                    "maxDurationMs": _number(row.get("max_duration")),
                    "p95DurationMs": _number(row.get("p95_duration")),
                    "avgAttempts": _number(row.get("avg_attempts")),
                }
            )
        points: JsonArray = [
            {
                "at": _hour_ms(row.get("at")),
                "total": _number(row.get("total")),
                "failed": _number(row.get("failed")),
                "avgDurationMs": _number(row.get("avg_duration")),
            }
            for row in series
        ]
        return {"bindings": bindings, "series": points}


def analytics_engine_metrics(
    resolve: Callable[[object], Mapping[str, object] | None], post: Post | None = None
) -> Callable[[object], AnalyticsEngineReader | None]:
    """Turn ``metrics=env -> {accountId, apiToken, dataset} | None`` into the REST seam."""
    # A-24, M-6

    def reader(env: object) -> AnalyticsEngineReader | None:
        found = resolve(env)
        if not found:
            return None
        credentials = AnalyticsCredentials(
            str(found["accountId"]), str(found["apiToken"]), str(found["dataset"])
        )
        return AnalyticsEngineReader(credentials, post)

    return reader
