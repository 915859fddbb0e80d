"""Cloudflare Access checks in a Worker: WebCrypto verifies RS256, the runtime's ``fetch`` gets the JWKS.

``cryptography`` does not load in every Pyodide, and httpx needs ``ssl``; the Workers runtime has both
jobs built in. ``WorkerHandlers`` installs these as the Access platform before it serves REST (ADR-0128).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable
from typing import Final, Protocol

from tsumugi.core.json_types import JsonObject
from tsumugi.runtimes.cloudflare.js_conversion import to_js_value, to_py_value
from tsumugi.runtimes.cloudflare.js_objects import JsValue

JWKS_TIMEOUT_MS: Final = 10_000
RS256: Final = {"name": "RSASSA-PKCS1-v1_5", "hash": "SHA-256"}


class _SubtleCrypto(Protocol):
    def importKey(
        self, key_format: str, key: JsValue, algorithm: JsValue, extractable: bool, usages: JsValue
    ) -> Awaitable[JsValue]: ...

    def verify(
        self, algorithm: JsValue, key: JsValue, signature: JsValue, data: JsValue
    ) -> Awaitable[JsValue]: ...


class _Crypto(Protocol):
    @property
    def subtle(self) -> _SubtleCrypto: ...


class _FetchResponse(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def status(self) -> int: ...

    def json(self) -> Awaitable[JsValue]: ...


class _AbortSignalClass(Protocol):
    def timeout(self, delay_ms: int) -> JsValue: ...


class _JsGlobals(Protocol):
    """The globals of the Workers runtime this module uses (the ``js`` module)."""

    @property
    def crypto(self) -> _Crypto: ...

    @property
    def AbortSignal(self) -> _AbortSignalClass: ...

    def fetch(self, url: str, init: JsValue) -> Awaitable[_FetchResponse]: ...


def _js() -> _JsGlobals:
    js: _JsGlobals = importlib.import_module("js")
    return js


async def verify_rs256(jwk: JsonObject, signed: bytes, signature: bytes) -> bool:
    """True when ``signature`` is an RS256 signature of ``signed`` by the RSA public key ``jwk``."""
    if jwk.get("kty") != "RSA" or not isinstance(jwk.get("n"), str) or not isinstance(jwk.get("e"), str):
        return False
    subtle = _js().crypto.subtle
    public = {"kty": "RSA", "n": jwk["n"], "e": jwk["e"]}  # only the key: WebCrypto checks use/alg/key_ops
    try:
        key = await subtle.importKey(
            "jwk", to_js_value(public), to_js_value(RS256), False, to_js_value(["verify"])
        )
        return bool(await subtle.verify(to_js_value(RS256), key, to_js_value(signature), to_js_value(signed)))
    except Exception:  # a malformed key is a refusal, never a 500 (ADR-0065)
        return False


async def fetch_jwks(url: str) -> JsonObject:
    """The JWKS at ``url``, through the runtime's ``fetch``; raises on a failed answer."""
    js = _js()
    answer = await js.fetch(url, to_js_value({"signal": js.AbortSignal.timeout(JWKS_TIMEOUT_MS)}))
    if not answer.ok:
        raise RuntimeError(f"JWKS fetch from {url} answered {answer.status}")
    jwks = to_py_value(await answer.json())
    if not isinstance(jwks, dict):
        raise RuntimeError(f"JWKS from {url} is not a JSON object")
    return jwks
