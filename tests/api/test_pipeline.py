"""The request pipeline and its order (A-12..A-18, A-27, A-2) and the auth sweep over every route."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.api.rest_harness import AUTH, Harness, job

from tsumugi.api import MissingBindingsReport
from tsumugi.api.app import ROUTES
from tsumugi.runtimes.local.sql_database import SqliteDatabase

CONCRETE_ROUTES = [
    (method, path.replace("{id}", "MAIL%230:a1").replace("{binding}", "MAIL")) for method, path, _ in ROUTES
] + [("GET", "/api/openapi.json")]
MISSING = MissingBindingsReport(
    "tsumugi: the wrangler configuration is incomplete\n✗ TSUMUGI_DB (D1) is not configured",
    [{"kind": "d1", "name": "TSUMUGI_DB", "reason": "absent"}],
)


async def test_without_auth_everything_is_404_plain_text(harness: Harness) -> None:
    # nothing reveals the installation, not even the dashboard or the OpenAPI document.
    app = harness.app(auth=None, ui=lambda: "<!doctype html><title>Tsumugi</title>")
    async with harness.client(app) as client:
        for method, path in [*CONCRETE_ROUTES, ("GET", "/"), ("GET", "/anything"), ("DELETE", "/api/x")]:
            response = await client.request(method, path)
            assert response.status_code == 404, (method, path)
            assert response.text == "not found"
            assert response.headers["content-type"].startswith("text/plain")


@pytest.mark.parametrize(("method", "path"), CONCRETE_ROUTES)
async def test_every_api_route_refuses_a_missing_or_wrong_token(
    harness: Harness, method: str, path: str
) -> None:
    # the auth sweep; nothing reaches a shard or the enqueue function.
    async with harness.client(headers={}) as client:
        for headers in ({}, {"authorization": "Bearer wrong"}, {"cookie": "tsumugi_token=wrong"}):
            response = await client.request(method, path, headers=headers, json={})
            assert response.status_code == 401, (method, path, headers)
            assert response.json() == {"error": "unauthorized"}
    assert harness.shards.calls == []
    assert harness.enqueued == []


async def test_missing_bindings_answer_503_before_auth(harness: Harness) -> None:
    # A-13 [Q]: unauthenticated callers see the report, openapi.json included.
    app = harness.app(check_bindings=lambda env: MISSING)
    async with harness.client(app, headers={}) as client:
        for path in ("/api/jobs", "/api/openapi.json"):
            response = await client.get(path)
            assert response.status_code == 503
            assert response.json() == {"error": MISSING.message, "missing": list(MISSING.missing)}


async def test_complete_bindings_continue_to_auth(harness: Harness) -> None:
    # a None report means the configuration is complete.
    async with harness.client(harness.app(check_bindings=lambda env: None), headers={}) as client:
        assert (await client.get("/api/jobs")).status_code == 401


async def test_openapi_is_served_before_the_migration_check(harness: Harness) -> None:
    # a database without migrations still serves the document; A-16: everything else is 503.
    bare = SqliteDatabase(":memory:")
    harness.env.TSUMUGI_DB = bare
    async with harness.client() as client:
        assert (await client.get("/api/openapi.json")).status_code == 200
        for method, path in CONCRETE_ROUTES[:-1]:
            response = await client.request(method, path, json={})
            assert response.status_code == 503, (method, path)
            assert response.json()["error"].startswith("database schema is out of date: 0001_create_job")
    assert harness.shards.calls == []


async def test_dashboard_fallback_for_unmatched_gets(harness: Harness) -> None:
    # non-/api GETs get the HTML without auth; /api GETs only after auth.
    html = "<!doctype html><html lang=en><head></head><div id=app></div></html>"
    app = harness.app(ui=lambda: html)
    async with harness.client(app, headers={}) as client:
        for path in ("/", "/jobs/whatever", "/index.html"):
            response = await client.get(path)
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/html; charset=UTF-8"
            assert response.text == html
        assert (await client.get("/api/unknown")).status_code == 401
        assert (await client.post("/anything")).text == "404 Not Found"
    async with harness.client(app) as client:
        assert (await client.get("/api/unknown")).text == html


async def test_unmatched_without_ui_is_framework_404(api: httpx.AsyncClient) -> None:
    # plain text, for unknown paths and for methods a route does not take.
    cases = (("GET", "/"), ("GET", "/api/unknown"), ("DELETE", "/api/jobs"), ("PUT", "/api/stats"))
    for method, path in cases:
        response = await api.request(method, path)
        assert (response.status_code, response.text) == (404, "404 Not Found"), (method, path)


async def test_get_on_bulk_path_is_a_job_lookup(api: httpx.AsyncClient) -> None:
    # bulk routes are POST only; GET treats "bulk-retry" as a job id.
    response = await api.get("/api/jobs/bulk-retry")
    assert (response.status_code, response.json()) == (404, {"error": "not found"})


async def test_json_content_type_and_compact_body(api: httpx.AsyncClient) -> None:
    # application/json with the original's charset suffix, no pretty printing.
    response = await api.get("/api/stats")
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    assert response.text == '{"byState":{},"oldestScheduledMs":null}'


async def test_head_is_answered_like_get(api: httpx.AsyncClient) -> None:
    response = await api.head("/api/stats")
    assert response.status_code == 200


def test_auth_header_constant_is_bearer() -> None:
    assert AUTH["authorization"].startswith("Bearer ")


async def test_served_through_a_root_mount_with_env_from_scope_state(harness: Harness) -> None:
    # ADR-0060: the local runtime mounts the app at "/" and may carry env in scope["state"].
    from types import SimpleNamespace

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from tsumugi.runtimes.local.sql_database import apply_migrations

    other_db = SqliteDatabase(":memory:")
    apply_migrations(other_db)
    other_env = SimpleNamespace(TSUMUGI_DB=other_db, JOB_SHARD=harness.shards, TSUMUGI_TOKEN="other")
    await harness.add_jobs(job("MAIL#0:m1"))
    inner = harness.app()

    async def with_env(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/scoped"):
            scope = {**scope, "path": scope["path"][len("/scoped") :], "state": {"env": other_env}}
            scope["raw_path"] = scope["path"].encode()
        await inner(scope, receive, send)

    outer = Starlette(routes=[Mount("/", app=with_env)])
    async with harness.client(outer) as client:
        assert (await client.get("/api/jobs/MAIL%230%3Am1")).json()["job"]["id"] == "MAIL#0:m1"
        assert (await client.get("/scoped/api/jobs")).status_code == 401  # env's own token
        scoped = await client.get("/scoped/api/jobs", headers={"authorization": "Bearer other"})
        assert scoped.json() == {"jobs": [], "total": 0}
