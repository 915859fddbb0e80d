"""Spec audit of authentication on the wire: sources, exact refusals, failures (A-14, A-76, A-79, A-81, A-84,
A-86, A-87)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from tests.api.rest_harness import AUTH, NOW, TOKEN, Harness
from tests.api.test_auth_access import AUD, TEAM, Jwks, make_token

from tsumugi.api import access_auth, clear_jwks_cache
from tsumugi.clock import FixedClock

HTML = "<!doctype html><title>Tsumugi</title>"
UNAUTHORIZED = '{"error":"unauthorized"}'


async def test_refusal_is_exact_for_every_method(harness: Harness) -> None:
    # every method under /api/; A-81: 401 {"error":"unauthorized"} as JSON.
    async with harness.client(headers={}) as client:
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            response = await client.request(method, "/api/nothing-here")
            assert (response.status_code, response.text) == (401, UNAUTHORIZED), method
            assert response.headers["content-type"] == "application/json; charset=UTF-8"
        head = await client.head("/api/jobs")
        assert (head.status_code, head.content) == (401, b"")


async def test_bearer_scheme_without_token_falls_back_to_the_cookie(harness: Harness) -> None:
    # only "bearer <token>" is a header credential; otherwise the configured cookie decides.
    async with harness.client(headers={}) as client:
        for header in ("Bearer", "Token " + TOKEN, TOKEN):
            sent = {"authorization": header, "cookie": f"tsumugi_token={TOKEN}"}
            assert (await client.get("/api/stats", headers=sent)).status_code == 200, header
            alone = await client.get("/api/stats", headers={"authorization": header})
            assert (alone.status_code, alone.text) == (401, UNAUTHORIZED), header


async def test_dashboard_needs_no_credentials(harness: Harness) -> None:
    # the HTML is served unauthenticated; /api stays guarded.
    async with harness.client(harness.app(ui=lambda: HTML), headers={}) as client:
        assert (await client.get("/")).text == HTML
        assert (await client.get("/api/stats")).text == UNAUTHORIZED
    async with harness.client(harness.app(ui=lambda: HTML), headers=AUTH) as client:
        assert (await client.get("/api/stats")).status_code == 200


async def test_access_header_wins_over_the_cookie(harness: Harness) -> None:
    # the cookie is read only when the header is absent.
    clear_jwks_cache()
    auth = access_auth(TEAM, AUD, fetch_jwks=Jwks(), clock=FixedClock(NOW))
    good = make_token()
    async with harness.client(harness.app(auth=auth), headers={}) as client:
        assert (
            await client.get("/api/stats", headers={"cookie": f"CF_Authorization={good}"})
        ).status_code == 200
        mixed = {"Cf-Access-Jwt-Assertion": make_token(aud=["other"]), "cookie": f"CF_Authorization={good}"}
        refused = await client.get("/api/stats", headers=mixed)
        assert (refused.status_code, refused.text) == (401, UNAUTHORIZED)
        none = await client.get("/api/stats")
        assert (none.status_code, none.text) == (401, UNAUTHORIZED)


async def test_jwks_fetch_failure_is_a_500(harness: Harness) -> None:
    # A-86 [I]: a JWKS that cannot be fetched raises -> the framework's 500.
    clear_jwks_cache()

    async def unreachable(url: str) -> dict[str, Any]:
        raise OSError(f"cannot reach {url}")

    app = harness.app(auth=access_auth(TEAM, AUD, fetch_jwks=unreachable, clock=FixedClock(NOW)))
    async with harness.client(app, headers={}) as client:
        response = await client.get("/api/stats", headers={"Cf-Access-Jwt-Assertion": make_token()})
    assert (response.status_code, response.text) == (500, "Internal Server Error")


async def test_claims_are_attached_as_access_claims() -> None:
    # the verified claims under the spec's name `accessClaims`.
    clear_jwks_cache()
    auth = access_auth(TEAM, AUD, fetch_jwks=Jwks(), clock=FixedClock(NOW))
    raw = [(b"cf-access-jwt-assertion", make_token(sub="user-1").encode())]
    request = Request(
        {"type": "http", "method": "GET", "path": "/api/jobs", "headers": raw, "query_string": b""}
    )
    assert await auth(request, None) is None
    assert request.state.accessClaims["sub"] == "user-1"
    assert request.state.accessClaims["aud"] == [AUD]
