"""Hypothesis over the create, reschedule, start-run and bulk bodies on the local runtime (ADR-0133).

Extreme numbers (beyond int64, beyond 2^53, 1e308, denormals) and strings with lone surrogates go through
the real REST app, client, shards and SQLite files. Never a 5xx; a refusal is the status and shape a
reference model built from A-38, A-46, A-49, A-62 and ADR-0133 predicts; an accepted value is stored
as that model says (clamped numbers, U+FFFD for a lone surrogate in a key, payloads and inputs exact).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tests import polling
from tests.api.rest_harness import job

from tsumugi import bearer_auth, define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.storage.read_model_writer import D1ReadModelWriter

START = 1_700_000_000_000
TOKEN = "hostile-token"
SAFE = 2**53 - 1  # ADR-0133, written out here rather than imported: the model is the test's own
INSTANT = 8_640_000_000_000_000
DURATION = INSTANT // 2
SETTLE_S = 10.0
EXAMPLES = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,  # the same cases on every run: a failure here is a regression, not luck
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

EXTREMES = [2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 2**70, 1e19, 1e300, 1e308]
NUMBERS = st.one_of(
    st.sampled_from(EXTREMES + [-n for n in EXTREMES] + [0, -0.0, 0.5, 1, 5e-324, 1e-300]),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
)
NOT_NUMBERS: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.just("1"), st.just([]), st.just({})
)
MOSTLY_NUMBERS = st.one_of(NUMBERS, NUMBERS, NUMBERS, NOT_NUMBERS)  # a refusal is the rarer case
LONE = ["\ud800", "\udbff", "\udc00", "\udfff"]
STRINGS = st.one_of(
    st.text(max_size=6),
    st.lists(st.sampled_from([*LONE, "a", "é", "😀", "\x00", "-"]), max_size=4).map("".join),
)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | STRINGS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
    max_leaves=6,
)
_LONE_RE = re.compile("[\ud800-\udfff]")


class Parked(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


@create_flow({"MAIL": Parked})
def ONE(f: FlowBuilder) -> None:
    f.node("a", "MAIL", input=lambda run_input, done: run_input)


@dataclass
class Local:
    runtime: LocalRuntime
    clock: FixedClock
    client: httpx.AsyncClient
    counter: itertools.count[int]

    async def detail(self, path: str, key: str) -> dict[str, Any]:
        """The read model's view once the shard's tick has projected it (ADR-0119: about a second)."""

        async def projected() -> dict[str, Any] | None:
            answer = await self.client.get(path)
            if answer.status_code == 200:
                found: dict[str, Any] = answer.json()[key]
                return found
            assert answer.status_code == 404, answer.text
            self.clock.advance(1_000)
            await self.runtime.alarms.fire_due()
            return None

        found: dict[str, Any] = await polling.until(projected, f"{path} in the read model", SETTLE_S)
        return found


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[Local]:
    clock = FixedClock(START)
    app = define_tsumugi(
        performers={"MAIL": Parked},
        bindings={"MAIL": {"policy": {"paused": True}}},  # nothing runs: what is stored stays as stored
        flows={"one": ONE},
        auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
    )
    app.clock = clock
    runtime = LocalRuntime(app, tmp_path, clock=clock, vars={"TSUMUGI_TOKEN": TOKEN}, cron=False)
    await runtime.start()
    transport = httpx.ASGITransport(app=app.asgi(runtime.env))
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://local", headers=headers) as client:
        yield Local(runtime, clock, client, itertools.count())
    await runtime.stop(grace_s=1.0)


def _raw(body: Any) -> bytes:
    return json.dumps(body).encode()  # ensure_ascii: a lone surrogate travels as \ud800


def _received(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the server decodes it: two surrogates that make a pair arrive as one character."""
    decoded: dict[str, Any] = json.loads(_raw(body))
    return decoded


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _clamp(value: float, bound: int) -> float:
    return max(-bound, min(bound, value))


def _stored_text(value: str) -> str:
    return _LONE_RE.sub("\ufffd", value)


def _same(stored: Any, sent: Any) -> bool:
    """JSON equality as JavaScript sees it: a float printed in its shortest digits parses back to itself."""
    if isinstance(stored, dict) and isinstance(sent, dict):
        return stored.keys() == sent.keys() and all(_same(stored[k], sent[k]) for k in sent)
    if isinstance(stored, list) and isinstance(sent, list):
        return len(stored) == len(sent) and all(_same(a, b) for a, b in zip(stored, sent, strict=True))
    if isinstance(sent, float) and _is_number(stored):
        return float(stored) == sent
    if _is_number(sent) and _is_number(stored):
        return bool(stored == sent)
    return type(stored) is type(sent) and bool(stored == sent)


def _refused(response: httpx.Response, status: int = 400) -> None:
    event("refused")
    assert response.status_code == status, response.text
    assert set(response.json()) == {"error"}


# ------------------------------------------------------------------------------------------------- create
def _create_verdict(body: dict[str, Any]) -> str | None:
    """None if A-38 and ADR-0133 accept ``body``, else the field that refuses it."""
    for name in ("maxAttempts", "delayMs", "priority"):
        if name in body and not _is_number(body[name]):
            return name
    if "maxAttempts" in body and body["maxAttempts"] < 1:
        return "maxAttempts"
    if "delayMs" in body and body["delayMs"] < 0:
        return "delayMs"
    for name in ("concurrencyKey", "uniqueKey"):
        if name in body and not isinstance(body[name], str):
            return name
    expires = body.get("expiresInMs", 1)
    if not (_is_number(expires) and float(expires).is_integer() and expires > 0):
        return "expiresInMs"
    if "maxAttempts" in body and not float(body["maxAttempts"]).is_integer():
        return "maxAttempts"  # the enqueue's J-29 check: REST does not enforce integers, the engine does
    return None


CREATE_BODIES = st.fixed_dictionaries(
    {"binding": st.just("MAIL"), "payload": JSON},
    optional={
        "maxAttempts": MOSTLY_NUMBERS,
        "delayMs": MOSTLY_NUMBERS,
        "priority": MOSTLY_NUMBERS,
        "expiresInMs": NUMBERS,
        "concurrencyKey": STRINGS | NOT_NUMBERS,
        "uniqueKey": STRINGS,
    },
)


@EXAMPLES
@given(body=CREATE_BODIES)
async def test_create_never_fails_and_stores_what_it_accepts(local: Local, body: dict[str, Any]) -> None:
    # A-38, J-41, ADR-0133
    if body.get("uniqueKey"):
        body["uniqueKey"] = f"{next(local.counter)}:{body['uniqueKey']}"  # no collisions between cases
    now = local.clock.now()
    response = await local.client.post("/api/jobs", content=_raw(body))
    body = _received(body)
    if _create_verdict(body) is not None:
        _refused(response)
        return
    event("accepted")
    assert response.status_code == 201, (body, response.text)
    stored = await local.detail(f"/api/jobs/{quote(response.json()['id'], safe='')}", "job")
    assert _same(json.loads(stored["payload"]), body["payload"])  # lone surrogates too: escaped, not lost
    assert stored["priority"] == _clamp(body.get("priority", 0), SAFE)
    assert stored["max_attempts"] == int(_clamp(body.get("maxAttempts", 3), SAFE))
    assert stored["run_after"] == now + int(min(body.get("delayMs", 0), DURATION))
    for key, column in (("uniqueKey", "unique_key"), ("concurrencyKey", "concurrency_key")):
        assert stored[column] == (_stored_text(body[key]) if body.get(key) else None)


# --------------------------------------------------------------------------------------------- reschedule
RESCHEDULE_BODIES = st.one_of(
    st.fixed_dictionaries({"runAt": NUMBERS}, optional={"priority": NUMBERS}),
    st.fixed_dictionaries({"delayMs": NUMBERS}, optional={"priority": NUMBERS}),
    st.fixed_dictionaries(
        {}, optional={"runAt": MOSTLY_NUMBERS, "delayMs": MOSTLY_NUMBERS, "priority": MOSTLY_NUMBERS}
    ),
)


def _reschedule_verdict(body: dict[str, Any]) -> bool:
    if any(name in body and not _is_number(body[name]) for name in ("runAt", "delayMs", "priority")):
        return False
    if ("runAt" in body) == ("delayMs" in body):
        return False
    return bool(body.get("delayMs", 0) >= 0)


@EXAMPLES
@given(body=RESCHEDULE_BODIES)
async def test_reschedule_never_fails_and_stores_what_it_accepts(local: Local, body: dict[str, Any]) -> None:
    # ADR-0066, ADR-0133
    created = await local.client.post("/api/jobs", json={"binding": "MAIL", "payload": 1, "delayMs": 10**9})
    path = f"/api/jobs/{quote(created.json()['id'], safe='')}"
    now = local.clock.now()
    response = await local.client.post(f"{path}/reschedule", content=_raw(body))
    if not _reschedule_verdict(body):
        _refused(response)
        return
    event("accepted")
    assert (response.status_code, response.json()) == (200, {"ok": True})
    stored = await local.detail(path, "job")
    if "runAt" in body:
        assert stored["run_after"] == int(_clamp(body["runAt"], INSTANT))
    else:
        assert stored["run_after"] == int(now + min(body["delayMs"], DURATION))
    assert stored["priority"] == _clamp(body.get("priority", 0), SAFE)


# ---------------------------------------------------------------------------------------------- start-run
RUN_BODIES = st.fixed_dictionaries(
    {"flow": st.just("one"), "input": JSON},
    optional={"deadlineMs": MOSTLY_NUMBERS, "id": STRINGS | st.just(1)},
)


def _run_verdict(body: dict[str, Any]) -> str | None:
    if "id" in body and not isinstance(body["id"], str):
        return "id must be a string"
    deadline = body.get("deadlineMs", 1)
    if not (_is_number(deadline) and float(deadline).is_integer() and deadline > 0):
        return "deadlineMs must be a positive integer"
    if body.get("id") and not re.fullmatch(r"[A-Za-z0-9_-]+", body["id"]):
        return "invalid run id"  # A-63, ADR-0066
    return None


@EXAMPLES
@given(body=RUN_BODIES)
async def test_start_run_never_fails_and_stores_its_input(local: Local, body: dict[str, Any]) -> None:
    # ADR-0133
    if isinstance(body.get("id"), str) and body["id"] and _run_verdict(body) is None:
        body["id"] = f"r{next(local.counter)}{body['id']}"  # one run per case
    response = await local.client.post("/api/runs", content=_raw(body))
    body = _received(body)
    words = _run_verdict(body)
    if words is not None:
        _refused(response)
        assert response.json()["error"] == words
        return
    event("accepted")
    assert response.status_code == 201, (body, response.text)
    run = await local.detail(f"/api/runs/{quote(response.json()['id'], safe='')}", "run")
    assert _same(json.loads(run["input"]), body["input"])


# ------------------------------------------------------------------------------------------------- bulk
SEEDED = [
    job(
        f"{binding}#0:s{n}",
        state=state,
        created_at=START - 100_000 + n * 1_000,
        unique_key=uk,
        concurrency_key=ck,
    )
    for n, (binding, state, uk, ck) in enumerate(
        itertools.product(
            ("MAIL", "SMS"), ("FAILED", "STALLED", "COMPLETED"), ("u", "\ufffd", None), ("c", None)
        )
    )
]
FILTER_TEXT = st.sampled_from(["", "MAIL", "SMS", "u", "c", "\ufffd", *LONE]) | STRINGS
BULK_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "binding": FILTER_TEXT | NOT_NUMBERS,
        "state": st.sampled_from(["FAILED", "STALLED", "SCHEDULED", ""]) | NOT_NUMBERS,
        "unique_key": FILTER_TEXT,
        "concurrency_key": FILTER_TEXT,
        "created_from": NUMBERS | st.sampled_from([START - 90_000, START - 60_000]),
        "created_to": NUMBERS | st.sampled_from([START - 80_000, START - 50_000]),
        "limit": MOSTLY_NUMBERS,
    },
)


def _bulk_reference(body: dict[str, Any]) -> dict[str, Any] | None:
    """A-49..A-53 for bulk-retry over SEEDED (no shard holds them: every selected id is ``gone``)."""
    for name in ("binding", "state", "unique_key", "concurrency_key"):
        if name in body and not isinstance(body[name], str):
            return None
    if "state" in body and body["state"] not in ("FAILED", "STALLED"):
        return None
    for name in ("created_from", "created_to", "limit"):
        if name in body and not _is_number(body[name]):
            return None
    if body.get("limit", 1) < 1:
        return None
    states = [body["state"]] if "state" in body else ["FAILED", "STALLED"]

    def selected(row: dict[str, Any]) -> bool:
        for name in ("binding", "unique_key", "concurrency_key"):
            if body.get(name) and row[name] != _stored_text(body[name]):
                return False
        low, high = body.get("created_from", -math.inf), body.get("created_to", math.inf)
        return row["state"] in states and low <= row["created_at"] <= high

    matched = sorted((r for r in SEEDED if selected(r)), key=lambda r: (r["created_at"], r["id"]))
    taken = matched[: min(200, math.floor(body.get("limit", 200)))]
    return {
        "ok": [],
        "failed": [{"id": r["id"], "reason": "gone"} for r in taken],
        "remaining": len(matched) - len(taken),
    }


@EXAMPLES
@given(body=BULK_BODIES)
async def test_bulk_never_fails_and_selects_as_specified(local: Local, body: dict[str, Any]) -> None:
    # A-49..A-53, ADR-0133: bounds beyond every instant select as they would; keys compare as stored
    await D1ReadModelWriter(local.runtime.read_model).upsert_jobs(SEEDED)
    response = await local.client.post("/api/jobs/bulk-retry", content=_raw(body))
    expected = _bulk_reference(_received(body))
    if expected is None:
        _refused(response)
        return
    event("accepted")
    assert (response.status_code, response.json()) == (200, expected), body
