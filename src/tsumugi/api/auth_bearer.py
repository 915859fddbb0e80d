"""Bearer-token auth: header first, then an optional cookie; constant time, length hidden."""
# A-78..A-82

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tsumugi.api.wire import error_response
from tsumugi.errors import ConfigurationError

# A resolver reads the app's own env, whatever its runtime makes it (on Workers a JS proxy), as
# ``lambda env: env.TSUMUGI_TOKEN``: ``Any`` is the type that lets it.
TokenSource = str | Callable[[Any], str | None]


def unauthorized() -> Response:
    """the built-in refusal."""
    #
    return error_response("unauthorized", 401)


def read_cookie(request: Request, name: str) -> str | None:
    """The raw value of the first cookie called ``name``, not percent-decoded."""
    #
    header = request.headers.get("cookie")
    if not header:
        return None
    for part in header.split(";"):
        item = part.strip()
        key, sep, value = item.partition("=")
        if sep and key == name:
            return value
    return None


def tokens_equal(presented: str, expected: str) -> bool:
    """Compare SHA-256 digests so neither content nor length leaks through timing."""
    #
    a = hashlib.sha256(presented.encode("utf-8")).digest()
    b = hashlib.sha256(expected.encode("utf-8")).digest()
    return hmac.compare_digest(a, b)


def presented_token(request: Request, cookie: str | None) -> str | None:
    """``Authorization: Bearer <t>`` wins; otherwise the configured cookie."""
    #
    header = request.headers.get("authorization")
    if header is not None:
        parts = header.split(" ")
        if parts[0].lower() == "bearer" and len(parts) > 1:
            return parts[1]
    return read_cookie(request, cookie) if cookie else None


class BearerAuth:
    """``bearer_auth(token, cookie=...)``: the header's bearer token, else the cookie's, in constant time."""

    def __init__(self, token: TokenSource, cookie: str | None = None) -> None:
        if isinstance(token, str) and token == "":
            raise ConfigurationError("bearer_auth: the token must not be empty")
        self._token = token
        self.cookie = cookie

    def _expected(self, env: object) -> str | None:
        value = self._token(env) if callable(self._token) else self._token
        return value if isinstance(value, str) and value else None

    async def __call__(self, request: Request, env: object) -> Response | None:
        expected = self._expected(env)
        presented = presented_token(request, self.cookie)
        # a resolver without a value never opens up.
        if expected is None or presented is None or not tokens_equal(presented, expected):
            return unauthorized()
        return None


def bearer_auth(token: TokenSource, cookie: str | None = None) -> BearerAuth:
    """Guard ``/api/*`` with a fixed token or ``token(env)`` evaluated per request."""
    #
    return BearerAuth(token, cookie=cookie)
