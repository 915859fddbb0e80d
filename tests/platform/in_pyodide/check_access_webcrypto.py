"""Access verification in a Worker: WebCrypto's RS256 check, inside Pyodide 0.28.2 against a real key.

Collected only by the Pyodide runner (tests/platform/test_pyodide_suite.py); ADR-0128.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import js

from tsumugi.runtimes.cloudflare.access_webcrypto import RS256, verify_rs256
from tsumugi.runtimes.cloudflare.js_conversion import to_js_value, to_py_value


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


async def _key_pair() -> tuple[Any, dict[str, Any]]:
    algorithm = to_js_value({**RS256, "modulusLength": 2048, "publicExponent": b"\x01\x00\x01"})
    pair = await js.crypto.subtle.generateKey(algorithm, True, to_js_value(["sign", "verify"]))
    public = to_py_value(await js.crypto.subtle.exportKey("jwk", pair.publicKey))
    return pair.privateKey, public


async def _signed(private: Any, claims: dict[str, Any]) -> tuple[bytes, bytes]:
    header = _b64url(json.dumps({"alg": "RS256", "kid": "k1"}).encode())
    body = f"{header}.{_b64url(json.dumps(claims).encode())}".encode("ascii")
    signature = await js.crypto.subtle.sign(to_js_value(RS256), private, to_js_value(body))
    return body, bytes(js.Uint8Array.new(signature).to_py())


async def test_a_genuine_signature_verifies_and_a_tampered_one_does_not() -> None:
    private, public = await _key_pair()
    signed, signature = await _signed(private, {"iss": "x"})
    jwk = {**public, "kid": "k1", "use": "sig", "alg": "RS256"}  # as a JWKS lists it
    assert await verify_rs256(jwk, signed, signature) is True
    assert await verify_rs256(jwk, signed + b"x", signature) is False
    assert await verify_rs256(jwk, signed, bytes(len(signature))) is False


async def test_a_key_that_is_not_rsa_or_is_malformed_is_a_refusal() -> None:
    private, public = await _key_pair()
    signed, signature = await _signed(private, {})
    assert await verify_rs256({"kty": "EC", "crv": "P-256", "x": "a", "y": "b"}, signed, signature) is False
    assert await verify_rs256({**public, "n": "not-base64url!"}, signed, signature) is False
    assert await verify_rs256({"kty": "RSA"}, signed, signature) is False
