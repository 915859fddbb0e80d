"""Spec audit of runs, flows, schedules, diagnostics and metrics (A-22..A-25, A-55, A-58..A-67, J-149b)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.api.rest_harness import Harness, RecordingFlows, RecordingShard

from tsumugi.storage.read_model_writer import D1ReadModelWriter

RUN_GONE = (
    '{"ok":false,"error":"run is no longer available: '
    'removed from the coordinator after the retention period"}'
)


@pytest.fixture
def flows() -> RecordingFlows:
    return RecordingFlows("gen")


@pytest.fixture
async def runs_api(harness: Harness, flows: RecordingFlows) -> AsyncIterator[httpx.AsyncClient]:
    app = harness.app(flows=("signup", "billing"), start_run=flows.start, run_control=flows.control)
    async with harness.client(app) as client:
        yield client


def run_row(run_id: str, updated_at: int, state: str = "RUNNING") -> dict[str, Any]:
    return {"id": run_id, "seq": 1, "flow": run_id.split(":")[0], "state": state, "input": None,
            "node_total": 1, "node_done": 0, "node_failed": 0, "created_at": 1, "updated_at": updated_at,
            "parent_run_id": None, "parent_node_id": None}  # fmt: skip


async def test_run_list_order_filters_and_paging(harness: Harness, runs_api: httpx.AsyncClient) -> None:
    # updated_at DESC, id DESC; exact state/flow; A-29 paging shared with jobs.
    rows = [
        run_row("signup:a", 5),
        run_row("signup:b", 5),
        run_row("billing:c", 9, "FAILED"),
        run_row("signup:d", 1),
    ]
    await D1ReadModelWriter(harness.db).upsert_runs(rows)

    async def listed(query: str) -> tuple[list[str], int]:
        body = (await runs_api.get(f"/api/runs?{query}")).json()
        return [r["id"] for r in body["runs"]], body["total"]

    assert await listed("sort=created_at&order=asc") == (["billing:c", "signup:b", "signup:a", "signup:d"], 4)
    assert await listed("limit=0&offset=-1") == (["billing:c", "signup:b", "signup:a", "signup:d"], 4)
    assert await listed("limit=2.9&offset=1") == (["signup:b", "signup:a"], 4)
    assert await listed("flow=signup&state=RUNNING&limit=1000") == (["signup:b", "signup:a", "signup:d"], 3)
    assert await listed("flow=sign") == ([], 0)
    assert await listed("state=&flow=") == (["billing:c", "signup:b", "signup:a", "signup:d"], 4)
    detail = (await runs_api.get("/api/runs/signup%3Aa")).json()["run"]
    assert detail["input"] == "null"  # a null input is stored as the string "null"


async def test_without_flows_reads_are_empty_not_501(api: httpx.AsyncClient) -> None:
    # exact empty bodies.
    assert (await api.get("/api/runs")).text == '{"runs":[],"total":0}'
    assert (await api.get("/api/flows")).text == '{"flows":[]}'
    missing = await api.get("/api/runs/signup%3Ar1")
    assert (missing.status_code, missing.text) == (404, '{"error":"not found"}')


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[]", "flow is required"),
        ('"signup"', "body must be an object"),
        ('{"flow":"","input":1}', "flow is required"),
        ('{"flow":"nope","id":5}', "unknown flow: nope"),
        ('{"flow":"signup","id":5}', "input is required"),
        ('{"flow":"signup","input":null,"id":5,"deadlineMs":0}', "id must be a string"),
        ('{"flow":"signup","input":null,"deadlineMs":0}', "deadlineMs must be a positive integer"),
        ('{"flow":"signup","input":null,"deadlineMs":1.5}', "deadlineMs must be a positive integer"),
        ('{"flow":"signup","input":null,"deadlineMs":null}', "deadlineMs must be a positive integer"),
        ('{"flow":"signup","input":null,"deadlineMs":"60"}', "deadlineMs must be a positive integer"),
        ('{"flow":"signup","input":null,"id":"a:b"}', "invalid run id"),  # port answers 400, not 500
    ],
)
async def test_start_run_first_failure_wins(
    flows: RecordingFlows, runs_api: httpx.AsyncClient, body: str, message: str
) -> None:
    #
    response = await runs_api.post("/api/runs", content=body.encode())
    assert (response.status_code, response.json()) == (400, {"error": message})
    assert flows.started == []


async def test_start_run_accepts_any_input(flows: RecordingFlows, runs_api: httpx.AsyncClient) -> None:
    # input may be null; an empty id is absent; A-63: 201 {"id"}; deadlineMs reaches the flow.
    first = await runs_api.post(
        "/api/runs", json={"flow": "signup", "input": None, "id": "", "deadlineMs": 60_000}
    )
    second = await runs_api.post("/api/runs", json={"flow": "billing", "input": [1], "id": "r-1_X"})
    assert (first.status_code, first.text) == (201, '{"id":"signup:gen"}')
    assert (second.status_code, second.text) == (201, '{"id":"billing:r-1_X"}')
    assert flows.started == [("signup", None, None, 60_000), ("billing", [1], "r-1_X", None)]


@pytest.mark.parametrize(
    "run_id", ["signup", "signup%3A", "%3Ar1", "sign%20up%3Ar1", "signup%3Ar%3A1", "signup%3Ar.1"]
)
async def test_malformed_run_ids(flows: RecordingFlows, runs_api: httpx.AsyncClient, run_id: str) -> None:
    # 400 invalid run id, before the Run DO is asked.
    for action in ("retry", "cancel"):
        response = await runs_api.post(f"/api/runs/{run_id}/{action}")
        assert (response.status_code, response.text) == (400, '{"error":"invalid run id"}')
    assert flows.controlled == []


async def test_run_control_outcome_bodies(flows: RecordingFlows, runs_api: httpx.AsyncClient) -> None:
    # 200 / 409 / 410 exact; the flow name is not checked against the registry.
    flows.outcomes.update({"signup:a": {"ok": True}, "signup:b": {"ok": False, "reason": "invalid-state"}})
    cases = {"signup:a": (200, '{"ok":true}'),
             "signup:b": (409, '{"ok":false,"error":"not allowed in the current state"}'),
             "unregistered:c": (410, RUN_GONE)}  # fmt: skip
    for run_id, expected in cases.items():
        response = await runs_api.post(f"/api/runs/{run_id}/cancel")
        assert (response.status_code, response.text) == expected, run_id
    assert flows.controlled[-1] == ("unregistered:c", "cancel")


async def test_run_control_501_precedes_id_validation(harness: Harness) -> None:
    # without flows, even a malformed id answers 501.
    async with harness.client() as client:
        for path in ("/api/runs/bad/retry", "/api/runs/x:y/cancel"):
            response = await client.post(path)
            assert (response.status_code, response.text) == (501, '{"error":"run control is not available"}')


class PausedShard(RecordingShard):
    async def diagnostics(self) -> dict[str, Any]:
        blocked = {"capacity": False, "tokens": False, "perKey": False, "perKeyTokens": False, "paused": True}
        return {"active": 3, "outbox": 0, "blocked": blocked, "policy": {"paused": True}}


class PausedShards:
    def get(self, name: str) -> PausedShard:
        return PausedShard(name, [], {})


async def test_diagnostics_report_a_pause(harness: Harness) -> None:
    # J-149b and the seed page ("shows whether the cause is a pause"); A-55: the three booleans stay.
    harness.env.JOB_SHARD = PausedShards()
    async with harness.client(harness.app(performers=("MAIL",))) as client:
        body = (await client.get("/api/diagnostics")).json()
    blocked = {"capacity": False, "tokens": False, "perKey": False, "paused": True}
    assert body == {"shard": 0, "bindings": {"MAIL": {"active": 3, "outbox": 0, "blocked": blocked}}}


class Reader:
    def __init__(self) -> None:
        self.asked: list[tuple[int, str | None]] = []

    async def read(self, hours: int, binding: str | None) -> dict[str, Any]:
        self.asked.append((hours, binding))
        return {"bindings": [], "series": []}


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("", (24, None)), ("hours=", (24, None)), ("hours=1.9", (1, None)), ("hours=%202%20", (2, None)),
        ("hours=1e2", (100, None)), ("hours=0x10", (16, None)), ("hours=720", (720, None)),
        ("hours=5&hours=900", (5, None)), ("binding=", (24, None)), ("binding=_Mail_2", (24, "_Mail_2")),
        ("hours=0.99", "hours must be at least 1"), ("hours=abc", "hours must be at least 1"),
        ("hours=Infinity", "hours must be at least 1"), ("hours=-5", "hours must be at least 1"),
        ("hours=720.5", "hours must not exceed 720"), ("hours=721", "hours must not exceed 720"),
        ("binding=2fa", "binding is not a valid name"), ("binding=MA-IL", "binding is not a valid name"),
        ("binding=x%27%20OR%201", "binding is not a valid name"),
        ("hours=0&binding=-", "hours must be at least 1"),
    ],
)  # fmt: skip
async def test_metrics_query(harness: Harness, query: str, answer: tuple[int, str | None] | str) -> None:
    # hours default 24, floored, 1..720; binding empty or a valid name; A-67: {hours,bindings,series}.
    reader = Reader()
    async with harness.client(harness.app(metrics=lambda env: reader)) as client:
        response = await client.get(f"/api/metrics?{query}")
    if isinstance(answer, str):
        assert (response.status_code, response.json()) == (400, {"error": answer})
        assert reader.asked == []
    else:
        assert response.text == f'{{"hours":{answer[0]},"bindings":[],"series":[]}}'
        assert reader.asked == [answer]


async def test_run_detail_exact_keys_and_stray_nodes(harness: Harness, runs_api: httpx.AsyncClient) -> None:
    # RunDetail = RunSummary + input, parent ids, retryable; A-61: RunNode's 14 fields; node rows
    # without their run are a 404.
    writer = D1ReadModelWriter(harness.db)
    await writer.upsert_runs([{**run_row("signup:p", 5, "FAILED"), "parent_run_id": "billing:x",
                               "parent_node_id": "sub"}])  # fmt: skip
    node = {"run_id": "signup:p", "node_id": "a", "seq": 1, "binding": "MAIL", "state": "SKIPPED",
            "container": False, "parent": None, "origin": "static", "after": ["z"], "job_id": None,
            "child_run_id": "child:p-a", "result": None, "error": None, "position": 0, "created_at": 1,
            "updated_at": 2}  # fmt: skip
    await writer.upsert_run_nodes([node, {**node, "run_id": "signup:gone"}])
    body = (await runs_api.get("/api/runs/signup:p")).json()
    assert body["run"] == {
        "id": "signup:p", "flow": "signup", "state": "FAILED", "node_total": 1, "node_done": 0,
        "node_failed": 0, "created_at": 1, "updated_at": 5, "input": "null",
        "parent_run_id": "billing:x", "parent_node_id": "sub", "retryable": True,
    }  # fmt: skip
    expected_node = {k: v for k, v in node.items() if k not in ("run_id", "node_id", "seq")}
    # ADR-0147 extends A-61 with what a waiting node waits for: null for every other node.
    assert body["nodes"] == [{"id": "a", **expected_node, "wait": None, "wait_event": None, "wake_at": None}]
    stray = await runs_api.get("/api/runs/signup%3Agone")
    assert (stray.status_code, stray.text) == (404, '{"error":"not found"}')
