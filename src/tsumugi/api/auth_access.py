"""Cloudflare Access JWT verification: RS256 only, exact issuer, audience string or list.

The claim checks run on the decoded segments first, so the JWKS is fetched only for plausible tokens
. The signature is checked as RS256 whatever the header says (ADR-0065), by the platform's
``AccessPlatform``: on CPython, PyJWT over ``cryptography`` and an httpx fetch of the JWKS; in a Python
Worker, where ``cryptography`` does not load, WebCrypto and the runtime's ``fetch`` (ADR-0128).
"""
# A-83..A-87, A-86

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from starlette.requests import Request
from starlette.responses import Response

from tsumugi.api.auth_bearer import read_cookie, unauthorized
from tsumugi.clock import Clock, SystemClock
from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.errors import ConfigurationError

DEFAULT_JWKS_TTL_MS: Final = 3_600_000  # one hour
JWKS_TIMEOUT_S: Final = 10.0

FetchJwks = Callable[[str], Awaitable[JsonObject]]
# (jwk, signed bytes, signature) -> valid; False for a key that is not an RSA public key.
VerifyRs256 = Callable[[JsonObject, bytes, bytes], Awaitable[bool]]

# process-wide, per URL: (fetched_at_ms, jwks).
_jwks_cache: dict[str, tuple[int, JsonObject]] = {}


def clear_jwks_cache() -> None:
    """Forget every cached JWKS, so a rotated key is seen before the TTL ends."""
    _jwks_cache.clear()


async def _fetch_jwks_over_http(url: str) -> JsonObject:
    """The default fetcher; the Workers runtime passes its own ``fetch_jwks`` instead."""
    import httpx  # imported here: Workers bundles need not ship an HTTP client for Access

    async with httpx.AsyncClient(timeout=JWKS_TIMEOUT_S) as client:
        answer = await client.get(url)
        answer.raise_for_status()
        data: JsonValue = answer.json()
        if not isinstance(data, dict):
            raise ValueError(f"the JWKS at {url} is not a JSON object")
        return data


async def _verify_with_cryptography(jwk: JsonObject, signed: bytes, signature: bytes) -> bool:
    """The default verifier: PyJWT's RS256 over ``cryptography``, imported on first use."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from jwt.algorithms import RSAAlgorithm
    from jwt.exceptions import InvalidKeyError

    try:
        key = RSAAlgorithm.from_jwk(jwk)
    except (InvalidKeyError, ValueError, TypeError):
        return False
    if not isinstance(key, RSAPublicKey):
        return False
    return bool(RSAAlgorithm(RSAAlgorithm.SHA256).verify(signed, key, signature))


@dataclass(frozen=True)
class AccessPlatform:
    """How this runtime fetches a JWKS and checks an RS256 signature."""

    fetch_jwks: FetchJwks
    verify_rs256: VerifyRs256


_platform = AccessPlatform(_fetch_jwks_over_http, _verify_with_cryptography)


def use_access_platform(platform: AccessPlatform) -> None:
    """Install the runtime's JWKS fetch and RS256 check (the Workers runtime calls this on import)."""
    global _platform
    _platform = platform


def _segment_json(segment: str) -> JsonValue:
    padded = segment + "=" * (-len(segment) % 4)
    decoded: JsonValue = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    return decoded


def _segment_bytes(segment: str) -> bytes:
    return base64.urlsafe_b64decode((segment + "=" * (-len(segment) % 4)).encode("ascii"))


def _decode(token: str) -> tuple[JsonObject, JsonObject, list[str]] | None:
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header, payload = _segment_json(parts[0]), _segment_json(parts[1])
    except (ValueError, binascii.Error, UnicodeError):
        return None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        return None
    return header, payload, parts


class AccessAuth:
    """``access_auth(team_domain, aud)``: verify each request's Access JWT; claims go to ``request.state``."""

    def __init__(
        self,
        team_domain: str,
        aud: str,
        cache_ttl_ms: int = DEFAULT_JWKS_TTL_MS,
        fetch_jwks: FetchJwks | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not team_domain or not aud:
            raise ConfigurationError("cloudflare_access: team_domain and aud are required")
        self.issuer = f"https://{team_domain}.cloudflareaccess.com"
        self.jwks_url = f"{self.issuer}/cdn-cgi/access/certs"
        self.aud = aud
        self._ttl_ms = cache_ttl_ms
        self._fetch = fetch_jwks
        self._clock = clock or SystemClock()

    def _claims_ok(self, header: JsonMapping, payload: JsonMapping, now_ms: int) -> bool:
        if header.get("alg") != "RS256" or not header.get("kid"):
            return False
        if payload.get("iss") != self.issuer:
            return False
        aud = payload.get("aud")
        if not (aud == self.aud or (isinstance(aud, list) and self.aud in aud)):
            return False
        now_s = now_ms // 1000
        exp = payload.get("exp")
        if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now_s:
            return False
        nbf = payload.get("nbf")
        return not (isinstance(nbf, int | float) and not isinstance(nbf, bool) and nbf > now_s)

    async def _jwks(self, now_ms: int) -> JsonObject:
        cached = _jwks_cache.get(self.jwks_url)
        if cached is not None and now_ms - cached[0] < self._ttl_ms:
            return cached[1]
        jwks = await (self._fetch or _platform.fetch_jwks)(self.jwks_url)
        _jwks_cache[self.jwks_url] = (now_ms, jwks)
        return jwks

    async def verify(self, token: str) -> JsonObject | None:
        """The verified claims, or None when any check fails."""
        decoded = _decode(token)
        now_ms = self._clock.now()
        if decoded is None or not self._claims_ok(decoded[0], decoded[1], now_ms):
            return None
        header, payload, parts = decoded
        keys = (await self._jwks(now_ms)).get("keys")
        listed = keys if isinstance(keys, list) else []  # a JWKS without a key list holds no key
        jwk = next((k for k in listed if isinstance(k, dict) and k.get("kid") == header["kid"]), None)
        if jwk is None:
            return None  # an unknown kid does not refetch
        try:
            signature = _segment_bytes(parts[2])
            signed = f"{parts[0]}.{parts[1]}".encode("ascii")
        except (ValueError, binascii.Error, UnicodeError):
            return None  # ADR-0065: a malformed signature is a refusal, not a 500
        if not await _platform.verify_rs256(jwk, signed, signature):
            return None  # a malformed key is a refusal too
        return payload

    async def __call__(self, request: Request, env: object) -> Response | None:
        token = request.headers.get("cf-access-jwt-assertion") or read_cookie(request, "CF_Authorization")
        if not token:
            return unauthorized()
        claims = await self.verify(token)
        if claims is None:
            return unauthorized()
        # downstream handlers find the claims under the spec's name and the Python spelling.
        request.state.accessClaims = claims
        request.state.access_claims = claims
        return None


def access_auth(
    team_domain: str,
    aud: str,
    cache_ttl_ms: int = DEFAULT_JWKS_TTL_MS,
    fetch_jwks: FetchJwks | None = None,
    clock: Clock | None = None,
) -> AccessAuth:
    """Guard ``/api/*`` with Cloudflare Access."""
    # A-83..A-87
    return AccessAuth(team_domain, aud, cache_ttl_ms, fetch_jwks, clock)
