"""Who may call the real Worker's REST API, and what answers where no route does (A-12..A-18, A-79..A-81).

Expected wire values come from the spec. What this deployment can and cannot show of the pipeline
(A-12..A-18): the Worker always runs with a token, every binding and the applied migrations, so

- A-12 / A-76 / J-9 (no auth configured: 404 for everything) and A-78 (a token resolver without a value:
  401 for every request) need a deployment without a token and are proven in-process
  (tests/api/test_spec_auth.py). Observable here is what fail-closed leaves for a configured token:
  nothing under /api/ answers without the right credentials, for any method, and a refused mutation
  changes nothing;
- A-13 (503 with ``missing``) and A-16 / D-13 (migration 503s) need missing bindings or migrations;
- A-24: TSUMUGI_METRICS is not bound, so /api/metrics answers 501 before it reads its query.
"""

from __future__ import annotations

from typing import Final

import pytest
from tests.workerd.harness import TOKEN, Workers
from tests.workerd.rest_seed import Seeded
from tests.workerd.rest_wire import JSON_TYPE, assert_json, call, job_path, send

pytestmark = pytest.mark.workerd

UNAUTHORIZED: Final = {"error": "unauthorized"}


# ---------------------------------------------------------------------------------------------- auth

AUTH_CASES: Final = [
    # (Authorization header or None, Cookie header or None, accepted?)  A-79
    (f"Bearer {TOKEN}", None, True),
    (f"bearer {TOKEN}", None, True),  # the scheme is case-insensitive
    (None, f"tsumugi_token={TOKEN}", True),
    (None, f"tsumugi_token={TOKEN}; tsumugi_token=wrong", True),  # the first cookie of the name counts
    ("Basic dXNlcjpwdw==", f"tsumugi_token={TOKEN}", True),  # not a bearer header: the cookie decides
    ("Bearer", f"tsumugi_token={TOKEN}", True),  # a scheme without a token is no header credential
    (None, None, False),
    ("Bearer wrong-token", None, False),
    ("Bearer wrong-token", f"tsumugi_token={TOKEN}", False),  # a bearer header wins: no cookie
    (f"Bearer  {TOKEN}", f"tsumugi_token={TOKEN}", False),  # two spaces present the empty string
    (None, "tsumugi_token=wrong", False),
    (None, f"tsumugi_token=wrong; tsumugi_token={TOKEN}", False),
]


@pytest.mark.parametrize(("authorization", "cookie", "accepted"), AUTH_CASES)
def test_bearer_credentials_by_header_or_cookie(
    workers: Workers, seeded: Seeded, authorization: str | None, cookie: str | None, accepted: bool
) -> None:
    # ..A-81; the example wires bearer_auth(TSUMUGI_TOKEN, cookie="tsumugi_token"). The first
    # test asks for `seeded`, so the Workers settle its jobs while the tables run.
    headers = {k: v for k, v in (("authorization", authorization), ("cookie", cookie)) if v is not None}
    answer = send(workers, "GET", "/api/bindings", token=None, headers=headers)
    if accepted:
        assert assert_json(answer, 200)["bindings"][0] == "Boom"
    else:
        assert_json(answer, 401, UNAUTHORIZED)


# A.4: every operation of the catalogue plus the port's policy routes and an unknown /api path.
CATALOGUE: Final = [
    ("GET", "/api/jobs"), ("POST", "/api/jobs"), ("GET", "/api/jobs/Hello%230%3Aa"),
    ("POST", "/api/jobs/Hello%230%3Aa/retry"), ("POST", "/api/jobs/Hello%230%3Aa/reschedule"),
    ("POST", "/api/jobs/Hello%230%3Aa/cancel"), ("POST", "/api/jobs/bulk-retry"),
    ("POST", "/api/jobs/bulk-cancel"), ("GET", "/api/bindings"), ("GET", "/api/metrics"),
    ("GET", "/api/stats"), ("GET", "/api/diagnostics"), ("GET", "/api/schedules"), ("GET", "/api/runs"),
    ("POST", "/api/runs"), ("GET", "/api/runs/GREETINGS%3Aa"), ("POST", "/api/runs/GREETINGS%3Aa/retry"),
    ("POST", "/api/runs/GREETINGS%3Aa/cancel"), ("GET", "/api/flows"), ("GET", "/api/openapi.json"),
    ("POST", "/api/bindings/Hello/policy"), ("POST", "/api/bindings/Hello/policy/reset"),
    ("GET", "/api/nowhere"), ("DELETE", "/api/jobs"), ("OPTIONS", "/api/jobs"),
]  # fmt: skip


def test_nothing_under_api_answers_without_credentials(workers: Workers) -> None:
    # fail-closed for every route and method, before any validation (A-13 does not apply here).
    refusal = (401, JSON_TYPE, '{"error":"unauthorized"}')  # A-81, byte for byte
    answers = {
        (method, path): send(workers, method, path, b'{"binding":"Hello","payload":{}}', token=None)
        for method, path in CATALOGUE
    }
    wrong = {
        route: (answer.status, answer.headers.get("content-type"), answer.text)
        for route, answer in answers.items()
        if (answer.status, answer.headers.get("content-type"), answer.text) != refusal
    }
    assert wrong == {}
    head = send(workers, "HEAD", "/api/jobs", token=None)
    assert (head.status, head.text) == (401, "")


def test_a_refused_mutation_changes_nothing(workers: Workers, seeded: Seeded) -> None:
    # the refusal happens before the coordinator is asked; the live shard still has the job waiting.
    guarded = seeded.singles["guarded"]
    for options in ({"token": None}, {"token": "wrong-token"}, {"token": None, "headers": {"cookie": "x=1"}}):
        assert_json(call(workers, "POST", job_path(guarded, "cancel"), **options), 401, UNAUTHORIZED)
        bulk = call(workers, "POST", "/api/jobs/bulk-cancel", {"ids": [guarded]}, **options)
        assert_json(bulk, 401, UNAUTHORIZED)
    assert_json(call(workers, "POST", job_path(guarded, "cancel")), 200, {"ok": True})


# ----------------------------------------------------------------------- unmatched requests

UNMATCHED: Final = [
    # (method, path, with token?, status, what answers)
    ("GET", "/nowhere", False, 200, "html"),
    ("GET", "/api/nowhere", True, 200, "html"),  # [Q] the HTML fallback after auth
    ("GET", "/api/jobs/Hello%230%3Aa/retry", True, 200, "html"),  # no GET route there
    ("POST", "/nowhere", False, 404, "text"),
    ("POST", "/api/nowhere", True, 404, "text"),
    ("DELETE", "/api/jobs", True, 404, "text"),
    ("PUT", "/api/jobs/Hello%230%3Aa", True, 404, "text"),
    ("OPTIONS", "/api/jobs", True, 404, "text"),  # no CORS, no OPTIONS handling
    ("HEAD", "/api/stats", True, 200, "json"),
    ("HEAD", "/", False, 200, "html"),
]


@pytest.mark.parametrize(("method", "path", "authorized", "status", "kind"), UNMATCHED)
def test_unmatched_requests(
    workers: Workers, method: str, path: str, authorized: bool, status: int, kind: str
) -> None:
    headers = {"origin": "http://elsewhere.example", "access-control-request-method": "POST"}
    answer = send(workers, method, path, token=TOKEN if authorized else None, headers=headers)
    assert answer.status == status, answer
    assert not [name for name in answer.headers if name.startswith("access-control-")]
    content_type = {"html": "text/html; charset=UTF-8", "json": JSON_TYPE}.get(kind, "text/plain")
    assert answer.headers["content-type"].startswith(content_type), answer
    if method == "HEAD":
        assert answer.text == ""  # HEAD is GET without the body
    elif kind == "html":
        assert answer.text.startswith("<!doctype html>") and 'id="app"' in answer.text
    else:
        assert answer.text == "404 Not Found"
