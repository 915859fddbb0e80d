"""The REST API as the real Worker serves it, over HTTP only (A-2..A-71, A-76..A-82, S-21, J-132..J-135).

Expected wire values come from the spec. What this deployment can and cannot show of the pipeline
(A-12..A-18): the Worker always runs with a token, every binding and the applied migrations, so

- A-12 / A-76 / J-9 (no auth configured: 404 for everything) and A-78 (a token resolver without a value:
  401 for every request) need a deployment without a token and are proven in-process
  (tests/api/test_spec_auth.py). Observable here is what fail-closed leaves for a configured token:
  nothing under /api/ answers without the right credentials, for any method, and a refused mutation
  changes nothing;
- A-13 (503 with ``missing``) and A-16 / D-13 (migration 503s) need missing bindings or migrations;
- A-24: TSUMUGI_METRICS is not bound, so /api/metrics answers 501 before it reads its query.

Other modules share these Workers: every assertion filters by ids, unique keys or concurrency keys made
up here, and the job list is never assumed empty.
"""

from __future__ import annotations

import http.client
import importlib.metadata
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
from tests.workerd.harness import TOKEN, Workers, quoted

pytestmark = pytest.mark.workerd

TAG: Final = uuid.uuid4().hex[:8]  # this module's keys and run ids, unique per session
HOUR_MS: Final = 3_600_000  # delayed jobs stay SCHEDULED for the whole module
SLACK_MS: Final = 1_000  # the Worker's clock is read at request time, ours around the request
JSON_TYPE: Final = "application/json; charset=UTF-8"
UNAUTHORIZED: Final = {"error": "unauthorized"}
NOT_FOUND: Final = {"error": "not found"}
NOT_ALLOWED: Final = {"ok": False, "error": "not allowed in the current state"}
JOB_GONE: Final = {
    "ok": False,
    "error": "job is no longer available: removed from the coordinator after the retention period",
}
RUN_GONE: Final = {
    "ok": False,
    "error": "run is no longer available: removed from the coordinator after the retention period",
}
TERMINAL_RUN: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED"})


# ---------------------------------------------------------------------------------------------- wire


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


# ------------------------------------------------------------------------------------------ the data

# (binding, priority) of the jobs the list tests sort and filter; all delayed, so none of them changes.
LIST_JOBS: Final = (("Hello", 3), ("Greet", 1), ("Hello", 1), ("Boom", 5), ("Greet", 1), ("Slow", 2))
LIST_UNIQUE_AT: Final = 2  # the one job of the list group that also has a unique key


@dataclass
class Seeded:
    """Everything this module enqueues up front, so the Workers settle it while the tables run."""

    list_key: str
    list_unique: str
    list_ids: list[str]
    singles: dict[str, str]  # purpose -> a delayed Hello job
    bulk_cancel_key: str
    bulk_cancel_unique: str
    bulk_cancel_ids: list[str]
    tally: dict[str, list[str]]  # shard name -> delayed Tally jobs
    done: str  # a Greet job that completes
    failed: list[str]  # Boom jobs with one attempt
    bulk_retry_key: str
    bulk_retry_ids: list[str]
    greetings: str  # a GREETINGS run started with an explicit id
    greetings_first_input: dict[str, str]
    pipeline: str
    timed: str  # a TIMED run whose 1 ms deadline fails it at once
    delayed: list[str] = field(default_factory=list)  # cancelled again at the end of the module

    def later(self, workers: Workers, binding: str = "Hello", **fields: Any) -> str:
        job_id = workers.enqueue(binding, {"tag": TAG}, delayMs=HOUR_MS, **fields)
        self.delayed.append(job_id)
        return job_id


def _start_run(workers: Workers, body: dict[str, Any]) -> str:
    return str(assert_json(call(workers, "POST", "/api/runs", body), 201)["id"])


@pytest.fixture(scope="module")
def seeded(workers: Workers) -> Iterator[Seeded]:
    greetings_input = {"prefix": f"rest-{TAG}"}
    data = Seeded(
        list_key=f"rest-{TAG}-list",
        list_unique=f"rest-{TAG}-unique",
        list_ids=[],
        singles={},
        bulk_cancel_key=f"rest-{TAG}-bc",
        bulk_cancel_unique=f"rest-{TAG}-bc-unique",
        bulk_cancel_ids=[],
        tally={},
        done=workers.enqueue("Greet", {"name": TAG}, uniqueKey=f"rest-{TAG}-done"),
        failed=[workers.enqueue("Boom", {"n": n}, maxAttempts=1) for n in range(3)],
        bulk_retry_key=f"rest-{TAG}-br",
        bulk_retry_ids=[],
        greetings=_start_run(workers, {"flow": "GREETINGS", "input": greetings_input, "id": f"rest-{TAG}"}),
        greetings_first_input=greetings_input,
        pipeline=_start_run(workers, {"flow": "PIPELINE", "input": {"prefix": TAG}, "id": f"rest-{TAG}"}),
        timed=_start_run(workers, {"flow": "TIMED", "input": {}, "deadlineMs": 1}),
    )
    # Per-key concurrency defaults to 1 (J-147): these three Boom jobs run one after the other.
    data.bulk_retry_ids = [
        workers.enqueue("Boom", {"n": n}, maxAttempts=1, concurrencyKey=data.bulk_retry_key) for n in range(3)
    ]
    for index, (binding, priority) in enumerate(LIST_JOBS):
        unique = {"uniqueKey": data.list_unique} if index == LIST_UNIQUE_AT else {}
        data.list_ids.append(
            data.later(workers, binding, priority=priority, concurrencyKey=data.list_key, **unique)
        )
    for purpose in ("cancel", "later", "past", "epoch", "guarded", "bulk"):
        unique = {"uniqueKey": f"rest-{TAG}-{purpose}"} if purpose == "later" else {}
        data.singles[purpose] = data.later(workers, **unique)
    for index in range(3):
        unique = {"uniqueKey": data.bulk_cancel_unique} if index == 2 else {}
        data.bulk_cancel_ids.append(data.later(workers, concurrencyKey=data.bulk_cancel_key, **unique))
    for key in ("a", "b", "c"):  # J-18: FNV-1a sends "a" and "c" to Tally#0, "b" to Tally#1
        job_id = workers.companion_enqueue(
            {"binding": "Tally", "payload": {"values": [1]}, "partition_key": key, "delay_ms": HOUR_MS}
        )
        data.tally.setdefault(job_id.split(":", 1)[0], []).append(job_id)
        data.delayed.append(job_id)
    yield data
    call(workers, "POST", "/api/jobs/bulk-cancel", {"ids": data.delayed})  # leave nothing waiting


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


# ----------------------------------------------------------------------------------------- list/read


@dataclass(frozen=True)
class ListGroup:
    """The list group's JobSummary rows, in enqueue order, and the bounds the queries use."""

    rows: list[dict[str, Any]]

    @property
    def low(self) -> int:
        return min(r["created_at"] for r in self.rows)

    @property
    def second(self) -> int:
        return sorted(r["created_at"] for r in self.rows)[1]

    def values(self, key: str, unique: str) -> dict[str, Any]:
        high = str(max(r["created_at"] for r in self.rows))
        return {
            "key": key, "unique": unique, "first": quoted(self.rows[0]["id"]),
            "prefix": quoted(self.rows[0]["id"][:-1]),
            "low": self.low, "low_hex": hex(self.low), "second": self.second,
            "high_exp": f"{high[0]}.{high[1:]}e{len(high) - 1}",  # JS Number() reads exponents
        }  # fmt: skip

    def expect(
        self,
        column: str = "updated_at",
        ascending: bool = False,
        where: Callable[[int, dict[str, Any]], bool] = lambda index, row: True,
        page: slice = slice(None),
    ) -> tuple[list[str], int]:
        """A-30: ORDER BY column, then id DESC whatever the direction; A-31: total ignores paging."""
        chosen = [row for index, row in enumerate(self.rows) if where(index, row)]
        by_id = sorted(chosen, key=lambda row: str(row["id"]), reverse=True)
        ordered = sorted(by_id, key=lambda row: row[column], reverse=not ascending)  # stable
        return [row["id"] for row in ordered][page], len(chosen)


@pytest.fixture(scope="module")
def list_group(workers: Workers, seeded: Seeded) -> ListGroup:
    for job_id in seeded.list_ids:
        workers.wait_job(job_id, frozenset({"SCHEDULED"}))  # listed once projected
    rows = {r["id"]: r for r in listed(workers, f"concurrency_key={seeded.list_key}&limit=100")["jobs"]}
    return ListGroup([rows[job_id] for job_id in seeded.list_ids])


Expect = Callable[[ListGroup], tuple[list[str], int]]
LIST_CASES: Final[list[tuple[str, Expect]]] = [
    ("", lambda g: g.expect()),
    ("&sort=priority&order=asc", lambda g: g.expect("priority", ascending=True)),
    ("&sort=priority", lambda g: g.expect("priority")),
    ("&sort=priority&order=ASC", lambda g: g.expect("priority")),  # only the exact "asc" ascends
    ("&sort=binding&order=asc", lambda g: g.expect("binding", ascending=True)),
    ("&sort=created_at&order=asc", lambda g: g.expect("created_at", ascending=True)),
    ("&sort=payload&order=asc", lambda g: g.expect("updated_at", ascending=True)),  # not in the allow-list
    ("&sort=created_at%3BDROP%20TABLE%20job", lambda g: g.expect()),
    ("&limit=2&offset=1", lambda g: g.expect(page=slice(1, 3))),
    ("&limit=2.7", lambda g: g.expect(page=slice(0, 2))),  # A-29 port: floored
    ("&limit=1&offset=-3", lambda g: g.expect(page=slice(0, 1))),
    ("&binding=Greet", lambda g: g.expect(where=lambda i, r: r["binding"] == "Greet")),
    ("&state=scheduled", lambda g: g.expect(where=lambda i, r: False)),  # exact, case-sensitive
    ("&unique_key={unique}", lambda g: g.expect(where=lambda i, r: i == LIST_UNIQUE_AT)),
    ("&id={first}", lambda g: g.expect(where=lambda i, r: i == 0)),
    ("&id={prefix}", lambda g: g.expect(where=lambda i, r: False)),
    ("&state=&binding=&id=&unique_key=", lambda g: g.expect()),  # empty = no filter
    ("&created_from={low}&created_to={low}", lambda g: g.expect(where=lambda i, r: r["created_at"] == g.low)),
    ("&created_from=%20{second}%20", lambda g: g.expect(where=lambda i, r: r["created_at"] >= g.second)),
    ("&created_to={high_exp}", lambda g: g.expect()),
    ("&created_to={low_hex}", lambda g: g.expect(where=lambda i, r: r["created_at"] <= g.low)),
    ("&created_from=0&created_to=0", lambda g: g.expect(where=lambda i, r: False)),  # 0 is a real bound
]  # fmt: skip


@pytest.mark.parametrize(("query", "expect"), LIST_CASES)
def test_list_filters_sorts_and_pages(
    workers: Workers, seeded: Seeded, list_group: ListGroup, query: str, expect: Expect
) -> None:
    # A-28..A-31, over the six jobs of one made-up concurrency key.
    values = list_group.values(seeded.list_key, seeded.list_unique)
    body = listed(workers, f"concurrency_key={seeded.list_key}" + query.format(**values))
    ids, total = expect(list_group)
    assert ([row["id"] for row in body["jobs"]], body["total"]) == (ids, total)


@pytest.mark.parametrize(("query", "cap"), [("limit=1000", 100), ("limit=-5", 20), ("limit=abc", 20)])
def test_list_limits_without_a_filter(workers: Workers, seeded: Seeded, query: str, cap: int) -> None:
    # a default of 20 (missing, 0, non-numeric; the port's choice below 1), capped at 100.
    body = listed(workers, query)
    assert len(body["jobs"]) == min(body["total"], cap)


SUMMARY_KEYS: Final = {"id", "binding", "state", "priority", "attempts", "max_attempts", "created_at",
                       "updated_at", "dispatched_at", "retryable"}  # fmt: skip
DETAIL_KEYS: Final = SUMMARY_KEYS | {"concurrency_key", "unique_key", "guarantee", "run_after", "progress",
                                     "payload", "result", "attempts_log"}  # fmt: skip


def test_a_waiting_job_as_summary_and_detail(workers: Workers, seeded: Seeded, list_group: ListGroup) -> None:
    # exact key sets; A-11 payload as a JSON string; J-26 run_after = created + delay.
    summary = list_group.rows[LIST_UNIQUE_AT]
    assert set(summary) == SUMMARY_KEYS
    detail = assert_json(call(workers, "GET", job_path(summary["id"])), 200)["job"]
    assert set(detail) == DETAIL_KEYS
    assert {k: detail[k] for k in SUMMARY_KEYS} == summary
    assert detail | {"id": None, "created_at": 0, "updated_at": 0, "run_after": 0} == {
        "id": None, "binding": "Hello", "state": "SCHEDULED", "priority": 1, "attempts": 0, "max_attempts": 3,
        "created_at": 0, "updated_at": 0, "dispatched_at": None, "retryable": False,
        "concurrency_key": seeded.list_key, "unique_key": seeded.list_unique, "guarantee": "at-least-once",
        "run_after": 0, "progress": None, "payload": json.dumps({"tag": TAG}, separators=(",", ":")),
        "result": None, "attempts_log": [],
    }  # fmt: skip
    assert detail["run_after"] == detail["created_at"] + HOUR_MS


def test_finished_jobs_in_detail(workers: Workers, seeded: Seeded) -> None:
    # one attempt entry; stored entries may carry job_id (kept for compatibility), and the
    # synthesised entry of a completed job is exactly the five fields; A-33 retryable for FAILED.
    done = workers.wait_job(seeded.done)
    greeted = json.dumps({"greeted": TAG}, separators=(",", ":"))
    assert (done["state"], done["result"], done["retryable"]) == ("COMPLETED", greeted, False)
    (entry,) = done["attempts_log"]
    assert entry.pop("job_id", done["id"]) == done["id"]
    assert entry == {"attempt": 1, "state": "COMPLETED", "started_at": done["dispatched_at"],
                     "finished_at": done["updated_at"], "error": None}  # fmt: skip
    failed = workers.wait_job(seeded.failed[0])
    assert [failed[k] for k in ("state", "attempts", "result", "retryable")] == ["FAILED", 1, None, True]
    (attempt,) = failed["attempts_log"]
    assert attempt.pop("job_id", failed["id"]) == failed["id"]
    assert [attempt[k] for k in ("attempt", "state", "finished_at")] == [1, "FAILED", failed["updated_at"]]
    assert "intentional failure" in attempt["error"] and len(attempt["error"]) <= 2_000


def test_percent_encoded_ids(workers: Workers, seeded: Seeded) -> None:
    # path parameters are percent-decoded; ":" may be raw or encoded, in any hex case.
    job_id = seeded.done
    workers.wait_job(job_id)
    for encoded in (
        quoted(job_id),
        job_id.replace("#", "%23"),
        quoted(job_id).replace("%3A", "%3a"),
        "".join(f"%{byte:02X}" for byte in job_id.encode()),
    ):
        assert assert_json(call(workers, "GET", f"/api/jobs/{encoded}"), 200)["job"]["id"] == job_id, encoded
    # The coordinator found the job (409, not 410): the raw ":" form reaches the mutations too.
    assert_json(call(workers, "POST", f"/api/jobs/{job_id.replace('#', '%23')}/retry"), 409, NOT_ALLOWED)


@pytest.mark.parametrize(
    "path",
    ["/api/jobs/not-a-job-id", "/api/jobs/Hello%230%3Anope", "/api/jobs/bulk-retry",
     "/api/jobs/Hello%230%3Aa%2Fretry", "/api/runs/GREETINGS%3Anope", "/api/runs/nope"],
)  # fmt: skip
def test_reads_of_what_does_not_exist(workers: Workers, path: str) -> None:
    # no id validation on reads; A-27: GET of a bulk path is a lookup; A-60: runs likewise.
    assert_json(call(workers, "GET", path), 404, NOT_FOUND)


# ------------------------------------------------------------------------------------- create

CREATE_REFUSALS: Final = [
    (b'"text"', "body must be an object"),
    (b"[]", "binding is required"),  # [Q] an array passes step 1
    (b'{"binding":"","payload":1}', "binding is required"),
    (b'{"binding":"Nope","maxAttempts":"x"}', "unknown binding: Nope"),  # step 3 before 4 and 5
    (b'{"binding":"Hello","maxAttempts":"x"}', "payload is required"),
    (b'{"binding":"Hello","payload":1,"maxAttempts":null}', "maxAttempts must be a number"),
    (b'{"binding":"Hello","payload":1,"maxAttempts":0,"delayMs":"1"}', "delayMs must be a number"),
    (b'{"binding":"Hello","payload":1,"delayMs":-1,"priority":true}', "priority must be a number"),
    (b'{"binding":"Hello","payload":1,"maxAttempts":0.5,"delayMs":-1}', "maxAttempts must be at least 1"),
    (b'{"binding":"Hello","payload":1,"delayMs":-0.5,"uniqueKey":1}', "delayMs must not be negative"),
    (b'{"binding":"Hello","payload":1,"uniqueKey":null}', "uniqueKey must be a string"),
]


@pytest.mark.parametrize(("raw", "message"), CREATE_REFUSALS)
def test_create_job_refusals_in_order(workers: Workers, raw: bytes, message: str) -> None:
    # first failure wins, in the spec's order and words.
    assert_json(send(workers, "POST", "/api/jobs", raw), 400, {"error": message})


BAD_JSON: Final = [
    ("/api/jobs", b""), ("/api/jobs", b"NaN"),
    ("/api/jobs", b'{"binding":"Hello","payload":1}x'), ("/api/jobs/Hello%230%3Aa/reschedule", b"{"),
    ("/api/jobs/bulk-retry", b""), ("/api/jobs/bulk-cancel", b"[1,"), ("/api/runs", b""),
]  # fmt: skip


@pytest.mark.parametrize(("path", "raw"), BAD_JSON)
def test_unparsable_bodies(workers: Workers, path: str, raw: bytes) -> None:
    # every endpoint that reads a body refuses an empty or unparsable one the same way.
    assert_json(send(workers, "POST", path, raw), 400, {"error": "body must be valid JSON"})


def test_create_reads_json_whatever_the_content_type(workers: Workers, seeded: Seeded) -> None:
    # no content-type check; A-39: unknown fields ignored, empty keys dropped; A-40: 201 {"id"}, and a
    # live unique key answers the existing job.
    unique = f"rest-{TAG}-ctype"
    body = {"binding": "Hello", "payload": None, "delayMs": HOUR_MS, "uniqueKey": unique,
            "concurrencyKey": "", "guarantee": "at-most-once", "timeoutMs": 1, "runAt": 5,
            "partitionKey": "p"}  # fmt: skip
    raw = b" \n" + json.dumps(body).encode() + b"\t"
    ids: set[str] = set()
    for content_type in (None, "text/plain", "application/x-www-form-urlencoded"):
        headers = {"content-type": content_type} if content_type else {}
        created = assert_json(send(workers, "POST", "/api/jobs", raw, headers=headers), 201)
        assert set(created) == {"id"} and created["id"].startswith("Hello#0:")
        ids.add(created["id"])
    (job_id,) = ids
    seeded.delayed.append(job_id)
    job = workers.wait_job(job_id, frozenset({"SCHEDULED"}))
    assert (job["payload"], job["unique_key"], job["concurrency_key"]) == ("null", unique, None)
    assert job["guarantee"] == "at-least-once" and job["run_after"] == job["created_at"] + HOUR_MS


# ------------------------------------------------------------------------- single mutations (A-42..A-47)

RESCHEDULE_REFUSALS: Final = [
    (b"null", "body must be an object"),
    (b"[]", "runAt or delayMs is required"),
    (b"{}", "runAt or delayMs is required"),
    (b'{"runAt":null}', "runAt must be a number"),
    (b'{"runAt":1,"delayMs":"5"}', "delayMs must be a number"),  # types before exclusivity
    (b'{"delayMs":1,"priority":"high"}', "priority must be a number"),
    (b'{"runAt":1,"delayMs":-1}', "runAt and delayMs are mutually exclusive"),
    (b'{"delayMs":-1}', "delayMs must not be negative"),
]


@pytest.mark.parametrize(("raw", "message"), RESCHEDULE_REFUSALS)
def test_reschedule_checks_its_body_before_the_id(workers: Workers, raw: bytes, message: str) -> None:
    # first failure wins; the (malformed) id is only looked at afterwards.
    assert_json(send(workers, "POST", "/api/jobs/not-an-id/reschedule", raw), 400, {"error": message})


@pytest.mark.parametrize(
    "job_id", ["Hello%230", "Hello%23x%3Aa", "1Hello%230%3Aa", "Hello%230%3Aa%3Ab", "%230%3Aa"],
)  # fmt: skip
def test_malformed_job_ids(workers: Workers, job_id: str) -> None:
    # 400 for each single mutation.
    for action in ("retry", "cancel", "reschedule"):
        answer = call(workers, "POST", f"/api/jobs/{job_id}/{action}", {"delayMs": 0})
        assert_json(answer, 400, {"error": "invalid job id"})


@pytest.mark.parametrize(
    ("path", "raw", "expected"),
    [
        ("/api/jobs/Hello%230%3Anope/retry", b"{not json", JOB_GONE),  # retry/cancel read no body
        ("/api/jobs/Hello%230%3Anope/cancel", None, JOB_GONE),
        ("/api/jobs/Hello%230%3Anope/reschedule", b'{"delayMs":0}', JOB_GONE),
        ("/api/jobs/Nobody%237%3Aabc/cancel", None, JOB_GONE),  # a coordinator that never held a job
        ("/api/runs/GREETINGS%3Anope/retry", b"{not json", RUN_GONE),
        ("/api/runs/Unregistered%3Ax/cancel", None, RUN_GONE),  # the flow name is not checked
    ],
)
def test_unknown_well_formed_ids_are_gone(
    workers: Workers, path: str, raw: bytes | None, expected: Any
) -> None:
    # 410, never 404, for an id that parses.
    assert_json(send(workers, "POST", path, raw), 410, expected)


def test_cancel_a_waiting_job_then_it_refuses_everything(workers: Workers, seeded: Seeded) -> None:
    # SCHEDULED -> CANCELLED; A-43: a terminal job answers 409 to all three mutations.
    job_id = seeded.singles["cancel"]
    assert_json(call(workers, "POST", job_path(job_id, "cancel")), 200, {"ok": True})
    workers.wait_job(job_id, frozenset({"CANCELLED"}))
    for action in ("cancel", "retry", "reschedule"):
        assert_json(call(workers, "POST", job_path(job_id, action), {"delayMs": 0}), 409, NOT_ALLOWED)


def test_a_completed_job_refuses_every_mutation(workers: Workers, seeded: Seeded) -> None:
    workers.wait_job(seeded.done, frozenset({"COMPLETED"}))
    for action in ("retry", "cancel", "reschedule"):
        assert_json(call(workers, "POST", job_path(seeded.done, action), {"runAt": 1}), 409, NOT_ALLOWED)


def test_retry_of_a_failed_job_gives_one_more_attempt(workers: Workers, seeded: Seeded) -> None:
    # A-44, J-132: FAILED -> SCHEDULED, attempts kept, so Boom fails again after exactly one more attempt.
    job_id = seeded.failed[0]
    workers.wait_job(job_id, frozenset({"FAILED"}))
    assert_json(call(workers, "POST", job_path(job_id, "retry")), 200, {"ok": True})
    job = workers.wait_job(job_id, frozenset({"FAILED"}), attempts=2)
    assert [entry["attempt"] for entry in job["attempts_log"]] == [2, 1]  # newest first


def test_reschedule_later_keeps_the_id_and_the_unique_key(workers: Workers, seeded: Seeded) -> None:
    # new time = request time + delayMs, priority in the same step; A-47: the reservation stays.
    job_id = seeded.singles["later"]
    before = now_ms()
    answer = call(workers, "POST", job_path(job_id, "reschedule"), {"delayMs": 2 * HOUR_MS, "priority": 9})
    after = now_ms()
    assert_json(answer, 200, {"ok": True})
    job = workers.wait_job(job_id, frozenset({"SCHEDULED"}), priority=9)
    assert before + 2 * HOUR_MS - SLACK_MS <= job["run_after"] <= after + 2 * HOUR_MS + SLACK_MS
    again = {"binding": "Hello", "payload": {}, "uniqueKey": f"rest-{TAG}-later"}
    assert_json(call(workers, "POST", "/api/jobs", again), 201, {"id": job_id})


def test_reschedule_into_the_past_runs_the_job_now(workers: Workers, seeded: Seeded) -> None:
    # runAt may lie in the past; A-47: the alarm is re-armed, so the job runs an hour early.
    job_id = seeded.singles["past"]
    assert_json(call(workers, "POST", job_path(job_id, "reschedule"), {"runAt": 1_000}), 200, {"ok": True})
    job = workers.wait_job(job_id, frozenset({"COMPLETED"}))
    assert job["run_after"] == 1_000


def test_reschedule_to_the_epoch_is_accepted(workers: Workers, seeded: Seeded) -> None:
    # A-46; found in workerd: setAlarm() refuses times <= 0, so the adapter arms 1 ms instead.
    answer = call(workers, "POST", job_path(seeded.singles["epoch"], "reschedule"), {"runAt": 0})
    assert_json(answer, 200, {"ok": True})


def test_cancel_of_a_running_job_is_a_request(workers: Workers) -> None:
    # J-135 / seed page: 200 {"ok":true,"requested":true}; a reschedule while the request is pending (or
    # once the job is CANCELLED) answers 409.
    job_id = workers.enqueue("Slow", {"steps": 20})
    workers.wait_job(job_id, frozenset({"QUEUED", "RUNNING"}))
    assert_json(call(workers, "POST", job_path(job_id, "cancel")), 200, {"ok": True, "requested": True})
    assert_json(call(workers, "POST", job_path(job_id, "reschedule"), {"delayMs": 0}), 409, NOT_ALLOWED)
    assert workers.wait_job(job_id, frozenset({"CANCELLED", "COMPLETED", "FAILED"}))["state"] == "CANCELLED"


# ---------------------------------------------------------------------------------- bulk (A-48..A-53)

BULK_REFUSALS: Final = [
    ("bulk-retry", b"null", "body must be an object"),
    ("bulk-retry", b'{"ids":null}', "ids must be an array"),
    ("bulk-retry", b'{"ids":[]}', "ids must not be empty"),
    ("bulk-cancel", json.dumps({"ids": [f"Hello#0:j{i}" for i in range(201)]}).encode(),
     "ids must not exceed 200 entries"),
    ("bulk-retry", b'{"ids":["Hello#0:a",""]}', "ids must be non-empty strings"),
    ("bulk-cancel", b'{"state":null}', "state must be a string"),
    ("bulk-retry", b'{"unique_key":1,"concurrency_key":1}', "unique_key must be a string"),
    ("bulk-retry", b'{"state":""}', "state must be one of FAILED, STALLED for retry"),
    ("bulk-cancel", b'{"state":"FAILED"}', "state must be one of SCHEDULED for cancel"),
    ("bulk-retry", b'{"created_from":"1","limit":0}', "created_from must be a number"),
    ("bulk-cancel", b'{"limit":0.5}', "limit must be at least 1"),
]  # fmt: skip


@pytest.mark.parametrize(("action", "raw", "message"), BULK_REFUSALS)
def test_bulk_refusals_in_order(workers: Workers, action: str, raw: bytes, message: str) -> None:
    # ids mode when `ids` is present (null included), else filter mode; first failure wins.
    assert_json(send(workers, "POST", f"/api/jobs/{action}", raw), 400, {"error": message})


def test_bulk_cancel_by_ids_groups_by_coordinator(workers: Workers, seeded: Seeded) -> None:
    # one batch per coordinator in order of first appearance; refusals per group, then invalid
    # ids; a duplicate is refused the second time; other fields are ignored in ids mode.
    (zero_a, zero_b), (one,) = seeded.tally["Tally#0"], seeded.tally["Tally#1"]
    hello = seeded.singles["bulk"]
    ids = [zero_a, hello, one, zero_b, hello, "Tally#1:nope", "junk"]
    answer = call(workers, "POST", "/api/jobs/bulk-cancel", {"ids": ids, "state": 9, "limit": "x"})
    assert_json(answer, 200, {
        "ok": [zero_a, zero_b, hello, one],
        "failed": [{"id": hello, "reason": "invalid-state"}, {"id": "Tally#1:nope", "reason": "gone"},
                   {"id": "junk", "reason": "invalid-id"}],
        "remaining": 0,
    })  # fmt: skip
    for job_id in (zero_a, one):
        workers.wait_job(job_id, frozenset({"CANCELLED"}))


def test_bulk_retry_by_ids(workers: Workers, seeded: Seeded) -> None:
    first, second = seeded.failed[1:]
    for job_id in (first, second, seeded.done):
        workers.wait_job(job_id, frozenset({"FAILED", "COMPLETED"}))
    ids = [first, seeded.done, second, "Boom#0:nope", "junk"]
    assert_json(call(workers, "POST", "/api/jobs/bulk-retry", {"ids": ids}), 200, {
        "ok": [first, second],
        "failed": [{"id": "Boom#0:nope", "reason": "gone"}, {"id": seeded.done, "reason": "invalid-state"},
                   {"id": "junk", "reason": "invalid-id"}],
        "remaining": 0,
    })  # fmt: skip


def _oldest_first(workers: Workers, query: str) -> list[str]:
    """A-50: the filter mode's selection order, created_at then id, both ascending."""
    rows = listed(workers, f"{query}&limit=100")["jobs"]
    return [r["id"] for r in sorted(rows, key=lambda r: (r["created_at"], r["id"]))]


def test_bulk_retry_by_filter_takes_the_oldest_first(workers: Workers, seeded: Seeded) -> None:
    # filters combine, limit clips the selection; A-51: remaining = matches - selected.
    for job_id in seeded.bulk_retry_ids:
        workers.wait_job(job_id, frozenset({"FAILED"}), timeout_s=90)  # one at a time (per-key limit)
    oldest = _oldest_first(workers, f"concurrency_key={seeded.bulk_retry_key}")
    body = {"concurrency_key": seeded.bulk_retry_key, "binding": "Boom", "state": "FAILED", "limit": 2}
    answer = call(workers, "POST", "/api/jobs/bulk-retry", body)
    assert_json(answer, 200, {"ok": oldest[:2], "failed": [], "remaining": 1})


def test_bulk_cancel_by_filter(workers: Workers, seeded: Seeded) -> None:
    # a fractional limit is floored (port); empty-string filters are ignored; created bounds inclusive.
    for job_id in seeded.bulk_cancel_ids:
        workers.wait_job(job_id, frozenset({"SCHEDULED"}))
    oldest = _oldest_first(workers, f"concurrency_key={seeded.bulk_cancel_key}")
    body: dict[str, Any] = {"concurrency_key": seeded.bulk_cancel_key, "limit": 1.9}
    answer = call(workers, "POST", "/api/jobs/bulk-cancel", body)
    assert_json(answer, 200, {"ok": oldest[:1], "failed": [], "remaining": 2})
    last = seeded.bulk_cancel_ids[2]
    created = workers.wait_job(last, frozenset({"SCHEDULED"}))["created_at"]
    body = {"unique_key": seeded.bulk_cancel_unique, "binding": "", "created_from": created,
            "created_to": created, "state": "SCHEDULED"}  # fmt: skip
    answer = call(workers, "POST", "/api/jobs/bulk-cancel", body)
    assert_json(answer, 200, {"ok": [last], "failed": [], "remaining": 0})


# ------------------------------------------------------------------------- operations (A-54..A-58, A-69)

# src/app.py's performers in registration order (A-55 keeps it; A-56 sorts it).
REGISTERED: Final = ("Hello", "Boom", "Slow", "ListNames", "Greet", "Report", "Tally", "Shout")
JOB_STATES: Final = {"SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"}


def test_stats_count_the_read_model(workers: Workers, seeded: Seeded, list_group: ListGroup) -> None:
    # camelCase, only states with rows, age of the oldest SCHEDULED job from its creation.
    before = now_ms()
    stats = assert_json(call(workers, "GET", "/api/stats"), 200)
    assert set(stats) == {"byState", "oldestScheduledMs"}
    assert set(stats["byState"]) <= JOB_STATES
    assert all(isinstance(n, int) and n > 0 for n in stats["byState"].values())
    assert stats["byState"]["SCHEDULED"] >= len(LIST_JOBS)
    assert stats["oldestScheduledMs"] >= before - list_group.low - SLACK_MS


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/bindings", {"bindings": sorted(REGISTERED)}),
        ("/api/flows", {"flows": ["GREETINGS", "PIPELINE", "TIMED"]}),
    ],
)
def test_registered_names_sorted(workers: Workers, path: str, body: Any) -> None:
    # the registered names, ascending, including bindings that never ran.
    assert_json(call(workers, "GET", path), 200, body)


def test_diagnostics_ask_shard_zero_of_every_binding(workers: Workers, list_group: ListGroup) -> None:
    # registration order, live from <binding>#0; the three booleans (the port adds `paused`, J-149b).
    body = assert_json(call(workers, "GET", "/api/diagnostics"), 200)
    assert body["shard"] == 0
    assert list(body["bindings"]) == list(REGISTERED)
    for entry in body["bindings"].values():
        assert isinstance(entry["active"], int) and isinstance(entry["outbox"], int)
        assert {"capacity", "tokens", "perKey"} <= set(entry["blocked"])
        assert all(isinstance(flag, bool) for flag in entry["blocked"].values())
    waiting_hello = sum(1 for row in list_group.rows if row["binding"] == "Hello")
    assert body["bindings"]["Hello"]["active"] >= waiting_hello


SCHEDULE_KEYS: Final = {"name", "kind", "target", "every_ms", "cron", "overlap", "next_run_at", "last_run_at",
                        "last_fired_at", "last_job_id", "last_run_id", "last_skipped_at", "skipped_count",
                        "last_error"}  # fmt: skip


def test_schedules_from_the_scheduler(workers: Workers) -> None:
    # A-58, S-21: exactly these fields, by name; the definitions of src/app.py.
    schedules = assert_json(call(workers, "GET", "/api/schedules"), 200)["schedules"]
    assert all(set(item) == SCHEDULE_KEYS for item in schedules)
    defined = {s["name"]: (s["kind"], s["target"], s["every_ms"], s["cron"], s["overlap"]) for s in schedules}
    assert list(defined) == ["nightly", "ping-hello", "poll-names"]
    assert defined == {
        "nightly": ("flow", "GREETINGS", None, "0 3 * * *", "skip"),
        "ping-hello": ("job", "Hello", 60_000, None, "overlap"),
        "poll-names": ("job", "ListNames", 300_000, None, "skip"),
    }
    nightly = schedules[0]
    assert nightly["next_run_at"] % 86_400_000 == 3 * 3_600_000  # cron in UTC
    assert nightly["last_job_id"] is None and schedules[1]["last_run_id"] is None
    assert all(isinstance(s["skipped_count"], int) for s in schedules)


def test_metrics_without_a_dataset(workers: Workers) -> None:
    # TSUMUGI_METRICS is not bound here -> 501, checked before the query is validated.
    for query in ("", "?hours=24", "?hours=0", "?hours=abc", "?hours=721", "?binding=2fa"):
        answer = call(workers, "GET", f"/api/metrics{query}")
        assert_json(answer, 501, {"error": "metrics is not configured"})


OPERATION_IDS: Final = {
    "listJobs", "createJob", "getJob", "retryJob", "rescheduleJob", "cancelJob", "bulkRetryJobs",
    "bulkCancelJobs", "listBindings", "getMetrics", "getStats", "getDiagnostics", "listSchedules",
    "listRuns", "startRun", "getRun", "retryRun", "cancelRun", "listFlows", "getOpenApi",
    "updateBindingPolicy", "resetBindingPolicy",  # A-26 superseded: J-176's two routes are documented too
}  # fmt: skip


def _openapi(workers: Workers) -> dict[str, Any]:
    # The document answers the cookie as well as the header (A-70: both schemes are alternatives).
    cookie = {"cookie": f"tsumugi_token={TOKEN}"}
    answer = send(workers, "GET", "/api/openapi.json", token=None, headers=cookie)
    document: dict[str, Any] = assert_json(answer, 200)
    return document


def test_the_openapi_document(workers: Workers) -> None:
    # A-69..A-71
    document = _openapi(workers)
    assert document["openapi"] == "3.1.0" and document["info"]["title"] == "Tsumugi REST API"
    assert "501" in document["info"]["description"]
    assert document["security"] == [{"bearerAuth": []}, {"cookieAuth": []}]
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert (schemes["cookieAuth"]["type"], schemes["cookieAuth"]["in"]) == ("apiKey", "cookie")
    assert schemes["cookieAuth"]["name"] == "tsumugi_token"
    operations = [op for item in document["paths"].values() for op in item.values() if "operationId" in op]
    assert {op["operationId"] for op in operations} == OPERATION_IDS and len(operations) == len(OPERATION_IDS)
    assert all("503" in op["responses"] for op in operations if op["operationId"] != "getOpenApi")


def test_the_openapi_version_is_the_package_version(workers: Workers) -> None:
    # A-69; found in workerd: the Worker ships tsumugi without dist-info, so the package carries it.
    from tsumugi._version import __version__

    assert _openapi(workers)["info"]["version"] == __version__ == importlib.metadata.version("tsumugi")


# ------------------------------------------------------------------------------------ runs (A-57..A-65)

RUN_REFUSALS: Final = [
    (b'"GREETINGS"', "body must be an object"),
    (b"[]", "flow is required"),
    (b'{"flow":"nope","id":5}', "unknown flow: nope"),
    (b'{"flow":"GREETINGS","id":5}', "input is required"),
    (b'{"flow":"GREETINGS","input":null,"id":5,"deadlineMs":0}', "id must be a string"),
    (b'{"flow":"GREETINGS","input":null,"deadlineMs":0}', "deadlineMs must be a positive integer"),
    (b'{"flow":"GREETINGS","input":null,"id":"a:b"}', "invalid run id"),  # the port's 400, not 500
]


@pytest.mark.parametrize(("raw", "message"), RUN_REFUSALS)
def test_start_run_refusals_in_order(workers: Workers, raw: bytes, message: str) -> None:
    #
    assert_json(send(workers, "POST", "/api/runs", raw), 400, {"error": message})


@pytest.mark.parametrize("run_id", ["GREETINGS", "%3Ar1", "GREETINGS%3Ar.1", "GREETINGS%3Ar%3A1"])
def test_malformed_run_ids(workers: Workers, run_id: str) -> None:
    #
    for action in ("retry", "cancel"):
        assert_json(call(workers, "POST", f"/api/runs/{run_id}/{action}"), 400, {"error": "invalid run id"})


RUN_KEYS: Final = {"id", "flow", "state", "node_total", "node_done", "node_failed", "created_at",
                   "updated_at"}  # fmt: skip
NODE_KEYS: Final = {"id", "binding", "state", "container", "parent", "origin", "after", "job_id",
                    "child_run_id", "result", "error", "position", "created_at", "updated_at"}  # fmt: skip
NODE_DONE: Final = {"COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"}


def test_a_run_started_with_an_id_reads_back(workers: Workers, seeded: Seeded) -> None:
    # the same id answers the existing run, a new input is ignored: exact shapes.
    again = {"flow": "GREETINGS", "input": {"prefix": "other"}, "id": f"rest-{TAG}"}
    assert_json(call(workers, "POST", "/api/runs", again), 201, {"id": f"GREETINGS:rest-{TAG}"})
    assert seeded.greetings == f"GREETINGS:rest-{TAG}"
    workers.wait_run(seeded.greetings, frozenset({"COMPLETED"}))
    body = assert_json(call(workers, "GET", run_path(seeded.greetings)), 200)
    run, nodes = body["run"], body["nodes"]
    assert set(run) == RUN_KEYS | {"input", "parent_run_id", "parent_node_id", "retryable"}
    assert json.loads(run["input"]) == seeded.greetings_first_input
    assert (run["parent_run_id"], run["parent_node_id"], run["retryable"]) == (None, None, False)
    assert all(set(node) == NODE_KEYS for node in nodes)
    assert [node["position"] for node in nodes] == sorted(node["position"] for node in nodes)
    assert run["node_total"] == len(nodes) == 6  # list, the fan-out container, its three children, report
    assert run["node_done"] == sum(node["state"] in NODE_DONE for node in nodes) and run["node_failed"] == 0
    greet = next(node for node in nodes if node["id"] == "greet")
    assert (greet["container"], greet["job_id"], greet["after"]) == (True, None, ["list"])
    assert json.loads(greet["result"]) == {"total": 3, "succeeded": 3, "failed": 0}
    children = [node for node in nodes if node["parent"] == "greet"]
    assert len(children) == 3 and all(c["origin"] == "fanOut" and c["job_id"] for c in children)


def test_run_lists_filter_and_order(workers: Workers, seeded: Seeded) -> None:
    # exact flow/state filters, updated_at DESC then id DESC; A-29 paging.
    workers.wait_run(seeded.greetings, frozenset({"COMPLETED"}))
    body = assert_json(call(workers, "GET", "/api/runs?flow=GREETINGS&state=COMPLETED&limit=100"), 200)
    assert seeded.greetings in [run["id"] for run in body["runs"]]
    assert all(set(run) == RUN_KEYS and run["flow"] == "GREETINGS" for run in body["runs"])
    order = [(run["updated_at"], run["id"]) for run in body["runs"]]
    assert order == sorted(order, reverse=True)
    for query in ("flow=GREET", "state=completed", f"flow={TAG}"):
        assert_json(call(workers, "GET", f"/api/runs?{query}"), 200, {"runs": [], "total": 0})
    page = assert_json(call(workers, "GET", "/api/runs?limit=1&offset=-2"), 200)
    assert len(page["runs"]) == 1 and page["total"] >= 3


def test_a_subflow_run_names_its_parent(workers: Workers, seeded: Seeded) -> None:
    # parent_run_id / parent_node_id on the child; A-61: child_run_id on the subflow node.
    found = workers.wait_run(seeded.pipeline, frozenset({"COMPLETED"}))
    subflow = next(node for node in found["nodes"] if node["id"] == "greetings")
    child = assert_json(call(workers, "GET", run_path(subflow["child_run_id"])), 200)["run"]
    assert (child["flow"], child["parent_run_id"], child["parent_node_id"]) == (
        "GREETINGS", seeded.pipeline, "greetings")  # fmt: skip


def test_a_completed_run_refuses_control(workers: Workers, seeded: Seeded) -> None:
    # retry only from FAILED, cancel only from RUNNING.
    workers.wait_run(seeded.greetings, frozenset({"COMPLETED"}))
    for action in ("retry", "cancel"):
        assert_json(call(workers, "POST", run_path(seeded.greetings, action)), 409, NOT_ALLOWED)


def test_a_run_past_its_deadline_fails_and_is_retried(workers: Workers, seeded: Seeded) -> None:
    # deadlineMs overrides the flow's deadline, the run ends FAILED; A-60 retryable; A-65 retry.
    failed = workers.wait_run(seeded.timed, frozenset({"FAILED"}))
    assert failed["retryable"] is True and failed["node_failed"] == 1
    assert_json(call(workers, "POST", run_path(seeded.timed, "retry")), 200, {"ok": True})
    assert_json(call(workers, "POST", run_path(seeded.timed, "cancel")), 409, NOT_ALLOWED)  # FAILED again


def test_cancel_a_running_run(workers: Workers) -> None:
    # cancel from RUNNING; the run ends CANCELLED and is not retryable (only FAILED is).
    run_id = _start_run(workers, {"flow": "GREETINGS", "input": {"prefix": f"cancel-{TAG}"}})
    assert_json(call(workers, "POST", run_path(run_id, "cancel")), 200, {"ok": True})
    run = workers.wait_run(run_id, TERMINAL_RUN)
    assert (run["state"], run["retryable"]) == ("CANCELLED", False)
    assert_json(call(workers, "POST", run_path(run_id, "retry")), 409, NOT_ALLOWED)


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
