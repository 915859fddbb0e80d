"""Tsumugi.asgi(env): the REST app and dashboard built from the definition (A-12, A-13, A-17, U-2, M-6)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.application.rest_surface import metrics_resolver, rest_options
from tsumugi.clock import FixedClock
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.metrics_reader import LocalMetricsReader
from tsumugi.ui import dashboard_html

TOKEN = "secret-token"
HEADERS = {"authorization": f"Bearer {TOKEN}"}


class Step(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


@create_flow({"Step": Step})
def ONE(f: FlowBuilder) -> None:
    f.node("a", "Step", input=lambda i, d: i)


class RecordingRuns:
    def __init__(self) -> None:
        self.started: list[tuple[str, Any, Any]] = []

    def get(self, run_id: str) -> RecordingRuns:
        self.current = run_id
        return self

    async def start(self, flow: str, input: Any, deadline_ms: int | None = None) -> dict[str, Any]:
        self.started.append((self.current, input, deadline_ms))
        return {"id": self.current, "created": True}

    async def cancel(self) -> dict[str, Any]:
        return {"ok": False, "reason": "invalid-state"}


class ListingScheduler:
    def get(self, name: str) -> ListingScheduler:
        return self

    async def sync(self) -> None:
        return None

    async def list(self) -> list[dict[str, Any]]:
        return [_schedule("b"), _schedule("a")]


def _schedule(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "job",
        "target": "Step",
        "every_ms": 1000,
        "cron": None,
        "overlap": "skip",
        "next_run_at": 1,
        "last_run_at": None,
        "last_fired_at": None,
        "last_job_id": None,
        "last_run_id": None,
        "last_skipped_at": None,
        "skipped_count": 0,
        "last_error": None,
    }


@pytest.fixture
def database(tmp_path: Path) -> Iterator[SqliteDatabase]:
    db = SqliteDatabase(tmp_path / "read_model.sqlite3")
    apply_migrations(db)
    yield db
    db.close()


@pytest.fixture
def env(database: SqliteDatabase) -> dict[str, Any]:
    return {
        "JOB_SHARD": object(),
        "TSUMUGI_QUEUE": object(),
        "TSUMUGI_DB": database,
        "RUN": RecordingRuns(),
        "SCHEDULER": ListingScheduler(),
    }


def _app(**options: Any) -> Any:
    return define_tsumugi(
        performers={"Step": Step},
        flows={"ONE": ONE},
        schedules={"s": {"binding": "Step", "every_ms": 1000, "payload": {}}},
        **options,
    )


async def _client(asgi: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=asgi)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


async def test_without_auth_everything_answers_404(env: dict[str, Any]) -> None:
    # fail-closed
    async for client in _client(_app().asgi(env)):
        assert (await client.get("/api/jobs", headers=HEADERS)).status_code == 404
        assert (await client.get("/")).status_code == 404


async def test_the_app_is_built_once_per_env(env: dict[str, Any]) -> None:
    tsumugi = _app(auth=bearer_auth(TOKEN))
    assert tsumugi.asgi(env) is tsumugi.asgi(env)
    assert tsumugi.asgi(dict(env)) is not tsumugi.asgi(env)


async def test_runs_flows_and_schedules_are_served_from_the_definition(env: dict[str, Any]) -> None:
    tsumugi = _app(auth=bearer_auth(TOKEN))
    async for client in _client(tsumugi.asgi(env)):
        assert (await client.get("/api/flows", headers=HEADERS)).json() == {"flows": ["ONE"]}
        created = await client.post(
            "/api/runs",
            headers=HEADERS,
            json={"flow": "ONE", "input": {"x": 1}, "id": "r1", "deadlineMs": 60000},
        )
        assert (created.status_code, created.json()) == (201, {"id": "ONE:r1"})  # F-22
        assert env["RUN"].started == [("ONE:r1", {"x": 1}, 60000)]
        cancel = await client.post("/api/runs/ONE:r1/cancel", headers=HEADERS)
        assert cancel.status_code == 409  # F-28: invalid-state
        listed = (await client.get("/api/schedules", headers=HEADERS)).json()
        assert [s["name"] for s in listed["schedules"]] == ["a", "b"]  # S-21: ordered by name


async def test_missing_bindings_answer_503_with_the_report(env: dict[str, Any]) -> None:
    # A-13, J-206: before auth
    del env["SCHEDULER"]
    async for client in _client(_app(auth=bearer_auth(TOKEN)).asgi(env)):
        answer = await client.get("/api/jobs")
        assert answer.status_code == 503
        body = answer.json()
        assert body["error"].startswith("tsumugi: the wrangler configuration is incomplete")
        assert [m["name"] for m in body["missing"]] == ["SCHEDULER"]


async def test_the_dashboard_carries_the_bearer_cookie(env: dict[str, Any]) -> None:
    # U-1..U-3: unmatched GETs get the dashboard, without auth, with the auth's token cookie injected
    tsumugi = _app(auth=bearer_auth(TOKEN, cookie="tsumugi_token"))
    async for client in _client(tsumugi.asgi(env)):
        page = await client.get("/jobs")
        assert page.status_code == 200
        assert page.text == dashboard_html("tsumugi_token")
        assert '{"tokenCookie":"tsumugi_token"}' in page.text
    hidden = _app(auth=bearer_auth(TOKEN), ui=False)
    async for client in _client(hidden.asgi(env)):
        assert (await client.get("/jobs")).status_code == 404  # no UI configured


def test_rest_options_carry_binding_facts() -> None:
    tsumugi = define_tsumugi(
        performers={"Step": Step, "Other": Step},
        bindings={"Step": {"shards": 3, "failed_retention_ms": 1000, "policy": {"concurrency": 2}}},
        auth=bearer_auth(TOKEN),
    )
    options = rest_options(tsumugi, env={})
    assert options.performers == ("Step", "Other")  # registration order
    assert options.binding("Step").shards == 3
    assert options.binding("Step").failed_retention_ms == 1000
    assert options.binding("Step").static_settings == tsumugi.static_settings("Step")
    assert options.binding("Other").failed_retention_ms == 604_800_000  # J-171 default
    assert options.flows == () and options.start_run is None and options.schedules is None


def test_metrics_read_locally_unless_analytics_engine_is_bound(database: SqliteDatabase) -> None:
    # ADR-0100 / M-6: credentials -> Analytics Engine; no dataset -> the local table; dataset alone -> 501
    clock = FixedClock(0)
    local = metrics_resolver(None, clock)
    assert isinstance(local({"TSUMUGI_DB": database}), LocalMetricsReader)
    assert local({"TSUMUGI_DB": database, "TSUMUGI_METRICS": object()}) is None
    remote = metrics_resolver(lambda env: {"accountId": "a", "apiToken": "t", "dataset": "d"}, clock)
    assert type(remote({"TSUMUGI_DB": database})).__name__ == "AnalyticsEngineReader"
