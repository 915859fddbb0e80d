"""Cloudflare Access JWT verification (A-83..A-87)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from jwt.algorithms import RSAAlgorithm
from starlette.requests import Request
from tests.api.rest_harness import NOW, Harness

from tsumugi.api import access_auth, clear_jwks_cache
from tsumugi.clock import FixedClock
from tsumugi.errors import ConfigurationError

TEAM = "acme"
AUD = "aud-123"
ISS = f"https://{TEAM}.cloudflareaccess.com"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def make_token(header: dict[str, Any] | None = None, key: Any = KEY, **claims: Any) -> str:
    head = {"alg": "RS256", "kid": "k1", **(header or {})}
    body = {"iss": ISS, "aud": [AUD], "exp": NOW // 1000 + 60, "email": "a@example.com", **claims}
    signing = f"{_b64(json.dumps(head).encode())}.{_b64(json.dumps(body).encode())}"
    signature = key.sign(signing.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing}.{_b64(signature)}"


class Jwks:
    def __init__(self) -> None:
        self.fetches: list[str] = []
        jwk = json.loads(RSAAlgorithm.to_jwk(KEY.public_key()))
        self.document = {"keys": [{**jwk, "kid": "k1"}]}

    async def __call__(self, url: str) -> dict[str, Any]:
        self.fetches.append(url)
        return self.document


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_jwks_cache()


def _request(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request(
        {"type": "http", "method": "GET", "path": "/api/jobs", "headers": raw, "query_string": b""}
    )


def test_construction_requires_team_and_aud() -> None:
    #
    with pytest.raises(ConfigurationError):
        access_auth("", AUD)
    with pytest.raises(ConfigurationError):
        access_auth(TEAM, "")


async def test_valid_token_passes_and_attaches_claims() -> None:
    #
    jwks = Jwks()
    auth = access_auth(TEAM, AUD, fetch_jwks=jwks, clock=FixedClock(NOW))
    request = _request({"Cf-Access-Jwt-Assertion": make_token()})
    assert await auth(request, None) is None
    assert request.state.access_claims["email"] == "a@example.com"
    assert jwks.fetches == [f"{ISS}/cdn-cgi/access/certs"]


async def test_cookie_is_the_fallback_source() -> None:
    #
    auth = access_auth(TEAM, AUD, fetch_jwks=Jwks(), clock=FixedClock(NOW))
    assert await auth(_request({"cookie": f"x=1; CF_Authorization={make_token()}"}), None) is None
    refusal = await auth(_request({}), None)
    assert refusal is not None and refusal.status_code == 401
    assert bytes(refusal.body) == b'{"error":"unauthorized"}'


@pytest.mark.parametrize(
    "token",
    [
        "a.b",
        "not.a.jwt",
        make_token({"alg": "HS256"}),
        make_token({"alg": "none"}),
        make_token({"kid": ""}),
        make_token(iss=f"https://{TEAM}.cloudflareaccess.com/"),
        make_token(aud="other"),
        make_token(aud=["x", "y"]),
        make_token(exp=NOW // 1000),
        make_token(exp=str(NOW // 1000 + 60)),
        make_token(nbf=NOW // 1000 + 1),
        make_token({"kid": "unknown"}),
        make_token(key=OTHER_KEY),
        make_token()[:-4] + "AAAA",
        make_token()[:-10] + "!!!!",
    ],
)
async def test_every_check_refuses_with_401(token: str) -> None:
    # each check on its own; a malformed signature segment is a refusal too (ADR-0065).
    auth = access_auth(TEAM, AUD, fetch_jwks=Jwks(), clock=FixedClock(NOW))
    refusal = await auth(_request({"Cf-Access-Jwt-Assertion": token}), None)
    assert refusal is not None and refusal.status_code == 401


async def test_audience_may_be_a_plain_string_and_nbf_in_the_past() -> None:
    auth = access_auth(TEAM, AUD, fetch_jwks=Jwks(), clock=FixedClock(NOW))
    token = make_token(aud=AUD, nbf=NOW // 1000)
    assert await auth(_request({"Cf-Access-Jwt-Assertion": token}), None) is None


async def test_jwks_is_fetched_only_after_claim_checks() -> None:
    # lazily, after the claims passed.
    jwks = Jwks()
    auth = access_auth(TEAM, AUD, fetch_jwks=jwks, clock=FixedClock(NOW))
    await auth(_request({"Cf-Access-Jwt-Assertion": make_token(aud="other")}), None)
    assert jwks.fetches == []


async def test_jwks_cache_ttl_and_no_refetch_on_unknown_kid() -> None:
    # cached per URL for the TTL; an unknown kid does not refetch; clear_jwks_cache forgets.
    jwks = Jwks()
    clock = FixedClock(NOW)
    auth = access_auth(TEAM, AUD, cache_ttl_ms=1_000, fetch_jwks=jwks, clock=clock)
    assert await auth(_request({"Cf-Access-Jwt-Assertion": make_token()}), None) is None
    await auth(_request({"Cf-Access-Jwt-Assertion": make_token({"kid": "k2"})}), None)
    assert len(jwks.fetches) == 1
    clock.advance(999)
    assert await auth(_request({"Cf-Access-Jwt-Assertion": make_token()}), None) is None
    assert len(jwks.fetches) == 1
    clock.advance(1)
    assert await auth(_request({"Cf-Access-Jwt-Assertion": make_token()}), None) is None
    assert len(jwks.fetches) == 2
    clear_jwks_cache()
    assert await auth(_request({"Cf-Access-Jwt-Assertion": make_token()}), None) is None
    assert len(jwks.fetches) == 3


async def test_access_guards_the_api(harness: Harness) -> None:
    auth = access_auth(TEAM, AUD, fetch_jwks=Jwks(), clock=FixedClock(NOW))
    async with harness.client(harness.app(auth=auth), headers={}) as client:
        assert (await client.get("/api/stats")).status_code == 401
        ok = await client.get("/api/stats", headers={"Cf-Access-Jwt-Assertion": make_token()})
        assert ok.status_code == 200
