"""Bad input on every POST gets a 4xx (never a 500) and changes nothing (A-3, A-38, A-46, A-49, A-62)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.api.rest_harness import Harness, make_harness

from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations

POST_PATHS = (
    "/api/jobs",
    "/api/jobs/MAIL%230:a/reschedule",
    "/api/jobs/bulk-retry",
    "/api/jobs/bulk-cancel",
    "/api/runs",
    "/api/bindings/MAIL/policy",
)
MALFORMED = (b"", b"{", b"[1,", b"nul", b"{'a':1}", b"NaN", b"-Infinity", b"\xff\xfe", b'{"a":1}x', b"\x00")
WRONG_TYPES: dict[str, list[dict[str, Any]]] = {
    "/api/jobs": [
        {"binding": "MAIL", "payload": 1, field: value}
        for field in ("maxAttempts", "delayMs", "priority", "concurrencyKey", "uniqueKey")
        for value in (None, "1", [], {}, True)
        if not (field.endswith("Key") and isinstance(value, str))
    ],
    "/api/jobs/MAIL%230:a/reschedule": [
        {field: value} for field in ("runAt", "delayMs", "priority") for value in (None, "1", [], {}, False)
    ],
    "/api/jobs/bulk-retry": [{"ids": v} for v in (None, "a", 1, {}, [1], [""], [None])]
    + [{f: 1} for f in ("binding", "state", "unique_key", "concurrency_key")]
    + [{f: "1"} for f in ("created_from", "created_to", "limit")],
    "/api/runs": [{"flow": 1, "input": 1}, {"flow": "f", "input": 1, "id": 1},
                  {"flow": "f", "input": 1, "deadlineMs": "5"}, {"flow": "f", "input": 1, "deadlineMs": -1}],
    "/api/bindings/MAIL/policy": [{f: "1"} for f in ("paused", "concurrency", "rate", "agingIntervalMs")],
}  # fmt: skip
WRONG_TYPES["/api/jobs/bulk-cancel"] = WRONG_TYPES["/api/jobs/bulk-retry"]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    async def start(self, *args: Any) -> str:
        self.calls.append(args)
        return "f:x"

    async def control(self, *args: Any) -> dict[str, Any]:
        self.calls.append(args)
        return {"ok": True}


def _app(harness: Harness, recorder: Recorder) -> Any:
    return harness.app(flows=("f",), start_run=recorder.start, run_control=recorder.control)


async def _assert_refused(harness: Harness, recorder: Recorder, path: str, content: bytes) -> None:
    async with harness.client(_app(harness, recorder)) as client:
        response = await client.post(path, content=content)
    assert 400 <= response.status_code < 500, (path, content, response.status_code, response.text)
    assert set(response.json()) == {"error"}
    assert harness.shards.calls == [] and harness.enqueued == [] and recorder.calls == []


async def test_malformed_json_on_every_post(harness: Harness) -> None:
    # "body must be valid JSON" everywhere a body is read.
    recorder = Recorder()
    for path in POST_PATHS:
        for raw in MALFORMED:
            async with harness.client(_app(harness, recorder)) as client:
                response = await client.post(path, content=raw)
            assert (response.status_code, response.json()) == (400, {"error": "body must be valid JSON"}), (
                path
            )
    assert harness.shards.calls == [] and harness.enqueued == [] and recorder.calls == []


async def test_wrong_types_on_every_post(harness: Harness) -> None:
    recorder = Recorder()
    for path, bodies in WRONG_TYPES.items():
        for body in bodies:
            await _assert_refused(harness, recorder, path, json.dumps(body).encode())


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
FIELD_NAMES = st.sampled_from(
    ["binding", "payload", "maxAttempts", "delayMs", "priority", "runAt", "ids", "state", "limit", "flow",
     "input", "id", "deadlineMs", "paused", "concurrency", "rate", "created_from"]
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(POST_PATHS), body=JSON_VALUES | st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=5)
)
async def test_arbitrary_json_never_causes_a_server_error(path: str, body: Any) -> None:
    # Any JSON on any POST: a 2xx or a 4xx with {"error"}, never a 5xx.
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    harness = make_harness(db)
    recorder = Recorder()
    async with harness.client(_app(harness, recorder)) as client:
        response: httpx.Response = await client.post(path, content=json.dumps(body).encode())
    assert response.status_code < 500, (path, body, response.text)
    if response.status_code >= 400:
        assert "error" in response.json()
