"""Spec audit of the request pipeline: methods, paths, 404/500 texts, the 503 gates.

Rules: A-1, A-3, A-9, A-12..A-18, D-13, D-14.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from tests.api.rest_harness import AUTH, Harness, job

from tsumugi.api import MissingBindingsReport
from tsumugi.api.app import ROUTES
from tsumugi.api.openapi import openapi_document
from tsumugi.ports import SqlValue
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_migrations import EXPECTED_MIGRATIONS

HTML = "<!doctype html><title>Tsumugi</title>"
UNAVAILABLE = {"error": "database temporarily unavailable"}


class FlakyDatabase:
    """A read model whose ledger query fails with a driver error while ``down`` (D-12: "unavailable")."""

    def __init__(self, inner: SqliteDatabase) -> None:
        self.inner = inner
        self.down = True
        self.ledger_reads = 0

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        if "d1_migrations" in sql:
            self.ledger_reads += 1
            if self.down:
                raise OSError("network connection lost")
        return await self.inner.all(sql, params)

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        return await self.inner.run(sql, params)

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        await self.inner.batch(statements)


def out_of_date(names: Sequence[str]) -> dict[str, str]:
    """D-13: the exact 503 body; the literal ``<database>`` is part of the message."""
    joined = ", ".join(names)
    return {
        "error": f"database schema is out of date: {joined} not applied. "
        'run "wrangler d1 migrations apply <database> --remote"'
    }


def test_every_path_is_under_api() -> None:
    # the route table and the OpenAPI document only hold /api/ paths.
    assert all(path.startswith("/api/") for _, path, _ in ROUTES)
    assert all(path.startswith("/api/") for path in openapi_document("0.6.0")["paths"])


async def test_no_auth_answers_404_for_every_method(harness: Harness) -> None:
    # any method, any path, the dashboard and the document included.
    app = harness.app(auth=None, ui=lambda: HTML)
    async with harness.client(app) as client:
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            for path in ("/", "/api/openapi.json", "/api/jobs", "/api/jobs/bulk-retry", "/jobs"):
                response = await client.request(method, path)
                assert response.status_code == 404, (method, path)
                assert response.headers["content-type"].startswith("text/plain"), (method, path)
                if method != "HEAD":
                    assert response.text == "not found", (method, path)


async def test_binding_report_only_guards_api_paths(harness: Harness) -> None:
    # the 503 with `missing` is for /api/*; the dashboard HTML is still served.
    report = MissingBindingsReport("tsumugi: the wrangler configuration is incomplete", [])
    app = harness.app(check_bindings=lambda env: report, ui=lambda: HTML)
    async with harness.client(app) as client:
        assert (await client.get("/")).text == HTML
        for method, path in (("POST", "/api/jobs"), ("GET", "/api/unknown"), ("DELETE", "/api/x")):
            response = await client.request(method, path)
            assert response.status_code == 503, (method, path)
            assert response.json() == {"error": report.message, "missing": []}


async def test_partially_applied_migrations_name_what_is_missing(harness: Harness) -> None:
    # A-16, D-13: missing names in expected order, joined by ", ".
    await harness.db.run(
        "DELETE FROM d1_migrations WHERE name IN (?, ?)", [EXPECTED_MIGRATIONS[7], EXPECTED_MIGRATIONS[2]]
    )
    async with harness.client() as client:
        response = await client.get("/api/jobs")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    assert response.json() == out_of_date([EXPECTED_MIGRATIONS[2], EXPECTED_MIGRATIONS[7]])


async def test_migration_gate_comes_before_501s_and_html(harness: Harness) -> None:
    # even endpoints that do not read D1 are gated, ahead of their 501 (A-20..A-24) and the
    # /api HTML fallback; an empty database lacks every migration (D-12).
    harness.env.TSUMUGI_DB = SqliteDatabase(":memory:")
    app = harness.app(ui=lambda: HTML, enqueue=None)
    cases = [("GET", "/api/diagnostics"), ("GET", "/api/flows"), ("GET", "/api/schedules"),
             ("GET", "/api/metrics?hours=0"), ("POST", "/api/runs"), ("POST", "/api/runs/x:y/retry"),
             ("POST", "/api/jobs"), ("POST", "/api/jobs/MAIL%230%3Aa/cancel"), ("GET", "/api/unknown"),
             ("POST", "/api/unknown")]  # fmt: skip
    async with harness.client(app) as client:
        for method, path in cases:
            response = await client.request(method, path, content=b"{}")
            assert (response.status_code, response.json()) == (503, out_of_date(EXPECTED_MIGRATIONS)), path
    assert harness.shards.calls == []


async def test_missing_migrations_heal_without_restart(harness: Harness) -> None:
    # D-14: "missing" is never cached; applying the migrations makes the next request pass.
    bare = SqliteDatabase(":memory:")
    harness.env.TSUMUGI_DB = bare
    async with harness.client() as client:
        assert (await client.get("/api/stats")).status_code == 503
        apply_migrations(bare)
        assert (await client.get("/api/stats")).json() == {"byState": {}, "oldestScheduledMs": None}


async def test_unavailable_is_rechecked_after_five_seconds(harness: Harness) -> None:
    # D-13: never suggests applying migrations; D-14: cached 5 000 ms, then checked again; ok forever.
    flaky = FlakyDatabase(harness.db)
    harness.env.TSUMUGI_DB = flaky
    async with harness.client() as client:
        first = await client.get("/api/jobs")
        assert (first.status_code, first.json()) == (503, UNAVAILABLE)
        flaky.down = False
        harness.clock.advance(4_999)
        assert (await client.get("/api/jobs")).json() == UNAVAILABLE
        assert flaky.ledger_reads == 1
        harness.clock.advance(1)
        assert (await client.get("/api/jobs")).json() == {"jobs": [], "total": 0}
        flaky.down = True
        assert (await client.get("/api/jobs")).status_code == 200
    assert flaky.ledger_reads == 2


async def test_openapi_is_served_while_the_database_is_unavailable(harness: Harness) -> None:
    # the document never touches D1.
    harness.env.TSUMUGI_DB = FlakyDatabase(harness.db)
    async with harness.client() as client:
        response = await client.get("/api/openapi.json")
    assert response.status_code == 200 and response.json()["openapi"] == "3.1.0"


async def test_trailing_slash_matches_no_route(harness: Harness) -> None:
    # routes are strict; a trailing slash is an unknown path (HTML for GET with a UI).
    async with harness.client(harness.app(ui=lambda: HTML)) as client:
        for path in ("/api/jobs/", "/api/stats/", "/api/jobs/MAIL%230%3Aa1/", "/api/"):
            assert (await client.get(path)).text == HTML, path
        response = await client.post("/api/jobs/", json={"binding": "MAIL", "payload": 1})
        assert (response.status_code, response.text) == (404, "404 Not Found")
    async with harness.client() as client:
        response = await client.get("/api/jobs/")
        assert (response.status_code, response.text) == (404, "404 Not Found")
    assert harness.enqueued == []


async def test_no_cors_and_no_options_handling(harness: Harness) -> None:
    # a preflight is an unknown non-GET request; A-14: auth runs first for every method.
    preflight = {"origin": "https://elsewhere.example", "access-control-request-method": "POST"}
    async with harness.client(harness.app(ui=lambda: HTML), headers={}) as client:
        refused = await client.options("/api/jobs", headers=preflight)
        assert (refused.status_code, refused.json()) == (401, {"error": "unauthorized"})
        allowed = await client.options("/api/jobs", headers={**preflight, **AUTH})
        assert (allowed.status_code, allowed.text) == (404, "404 Not Found")
        page = await client.options("/", headers=preflight)
        assert (page.status_code, page.text) == (404, "404 Not Found")
        listing = await client.get("/api/stats", headers={**AUTH, "origin": "https://elsewhere.example"})
    for response in (refused, allowed, page, listing):
        assert not any(name.startswith("access-control-") for name in response.headers)


async def test_head_is_a_get_without_a_body(harness: Harness, api: httpx.AsyncClient) -> None:
    # A-17 [I]: HEAD follows the GET route (framework behaviour) and carries no body.
    await harness.add_jobs(job("MAIL#0:h1"))
    response = await api.head("/api/jobs/MAIL%230%3Ah1")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    assert response.content == b""


async def test_uncaught_exception_is_plain_500(harness: Harness) -> None:
    # the framework's default 500 body.
    async def explode(env: Any, wire: dict[str, Any]) -> str:
        raise RuntimeError("boom")

    async with harness.client(harness.app(enqueue=explode)) as client:
        response = await client.post("/api/jobs", json={"binding": "MAIL", "payload": 1})
    assert (response.status_code, response.text) == (500, "Internal Server Error")
    assert response.headers["content-type"] == "text/plain; charset=UTF-8"


async def test_path_ids_decode_after_routing(harness: Harness, api: httpx.AsyncClient) -> None:
    # `:` raw or %3A; an encoded `/` stays inside the id instead of splitting the path.
    await harness.add_jobs(job("MAIL#0:p1"))
    for path in ("/api/jobs/MAIL%230%3Ap1", "/api/jobs/MAIL%230:p1", "/api/jobs/%4DAIL%230%3Ap1"):
        assert (await api.get(path)).json()["job"]["id"] == "MAIL#0:p1", path
    slashed = await api.get("/api/jobs/MAIL%230%3Aa%2Fb")
    assert (slashed.status_code, slashed.json()) == (404, {"error": "not found"})
    mutation = await api.post("/api/jobs/MAIL%230%3Aa%2Fb/retry")
    assert (mutation.status_code, mutation.json()) == (400, {"error": "invalid job id"})
    assert harness.shards.calls == []


async def test_bodyless_endpoints_ignore_garbage(harness: Harness) -> None:
    # job and run retry/cancel never read the body, so invalid JSON changes nothing.
    harness.shards.outcomes["MAIL#0:g1"] = {"ok": True}

    async def control(env: Any, run_id: str, action: str) -> dict[str, Any]:
        return {"ok": True}

    app = harness.app(flows=("signup",), run_control=control)
    async with harness.client(app) as client:
        for path in ("/api/jobs/MAIL%230%3Ag1/retry", "/api/jobs/MAIL%230%3Ag1/cancel",
                     "/api/runs/signup%3Ar1/retry", "/api/runs/signup:r1/cancel"):  # fmt: skip
            response = await client.post(path, content=b"{not json", headers={"content-type": "text/plain"})
            assert (response.status_code, response.text) == (200, '{"ok":true}'), path


async def test_bodies_are_decoded_like_fetch_text(harness: Harness, api: httpx.AsyncClient) -> None:
    # any Content-Type; as fetch's text(), a leading BOM is dropped and invalid UTF-8 becomes U+FFFD.
    bom = await api.post("/api/jobs", content=b'\xef\xbb\xbf{"binding":"MAIL","payload":1}')
    invalid = await api.post(
        "/api/jobs", content=b'{"binding":"MAIL","payload":"\xff"}', headers={"content-type": "text/plain"}
    )
    assert (bom.status_code, invalid.status_code) == (201, 201)
    assert harness.enqueued[-1] == {"binding": "MAIL", "payload": "\ufffd"}
    for body in (b"", b" ", b"{", b"NaN", b'{"binding":"MAIL","payload":Infinity}'):
        response = await api.post("/api/jobs", content=body)
        assert (response.status_code, response.text) == (400, '{"error":"body must be valid JSON"}'), body


async def test_extra_ledger_entries_are_ignored(harness: Harness, api: httpx.AsyncClient) -> None:
    # D-15: a newer migration in the ledger does not make the check fail.
    await harness.db.run("INSERT INTO d1_migrations (name) VALUES (?)", ["0099_from_the_future.sql"])
    assert (await api.get("/api/jobs")).text == '{"jobs":[],"total":0}'
