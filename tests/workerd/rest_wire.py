"""The REST API's wire as the ``test_rest_*`` modules see it: one request exactly as given, A-2 checked.

Expected wire values come from the spec (A-2..A-71, A-76..A-82, S-21, J-132..J-135); what this deployment
can and cannot show of the pipeline is said in test_rest_auth.py, the data the modules share in
rest_seed.py.
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from typing import Any, Final

from tests.workerd.harness import TOKEN, Workers, quoted

SLACK_MS: Final = 1_000  # the Worker's clock is read at request time, ours around the request
JSON_TYPE: Final = "application/json; charset=UTF-8"
NOT_ALLOWED: Final = {"ok": False, "error": "not allowed in the current state"}


@dataclass(frozen=True)
class Wire:
    status: int
    headers: dict[str, str]  # names lower-cased
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def send(
    workers: Workers,
    method: str,
    path: str,
    raw: bytes | None = None,
    *,
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
) -> Wire:
    """One request exactly as given: no Content-Type unless ``headers`` names one (A-3)."""
    sent = dict(headers or {})
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection("127.0.0.1", workers.port, timeout=60)
    try:
        connection.request(method, path, body=raw, headers=sent)
        response = connection.getresponse()
        found = {name.lower(): value for name, value in response.getheaders()}
        return Wire(response.status, found, response.read().decode("utf-8", errors="replace"))
    finally:
        connection.close()


def call(workers: Workers, method: str, path: str, body: Any = None, **options: Any) -> Wire:
    raw = None if body is None else json.dumps(body, separators=(",", ":")).encode()
    return send(workers, method, path, raw, **options)


def assert_json(wire: Wire, status: int, body: Any = None) -> Any:
    """A-2: the status, the JSON content type, a compact body, and the body itself when given."""
    assert wire.status == status, wire
    assert wire.headers.get("content-type") == JSON_TYPE, wire
    parsed = wire.json()
    assert wire.text == json.dumps(parsed, separators=(",", ":")), f"A-2: not compact: {wire.text[:200]}"
    if body is not None:
        assert parsed == body, wire
    return parsed


def job_path(job_id: str, action: str = "") -> str:
    return f"/api/jobs/{quoted(job_id)}" + (f"/{action}" if action else "")


def run_path(run_id: str, action: str = "") -> str:
    return f"/api/runs/{quoted(run_id)}" + (f"/{action}" if action else "")


def now_ms() -> int:
    return int(time.time() * 1000)


def listed(workers: Workers, query: str) -> dict[str, Any]:
    found: dict[str, Any] = assert_json(call(workers, "GET", f"/api/jobs?{query}"), 200)
    return found


def start_run(workers: Workers, body: dict[str, Any]) -> str:
    return str(assert_json(call(workers, "POST", "/api/runs", body), 201)["id"])
