"""Runs, flows and schedules over REST (A-21..A-25, A-57..A-65, F-84..F-89, S-21)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from tests.api.rest_harness import NOW, Harness, RecordingFlows

from tsumugi.storage.read_model_writer import D1ReadModelWriter

RUN_GONE = "run is no longer available: removed from the coordinator after the retention period"


def run(run_id: str, **fields: Any) -> dict[str, Any]:
    base = {"id": run_id, "seq": 1, "flow": run_id.split(":")[0], "state": "RUNNING", "input": {"n": 1},
            "node_total": 2, "node_done": 1, "node_failed": 0, "created_at": 10, "updated_at": 20,
            "parent_run_id": None, "parent_node_id": None}  # fmt: skip
    return {**base, **fields}


def node(run_id: str, node_id: str, position: int, **fields: Any) -> dict[str, Any]:
    base = {"run_id": run_id, "node_id": node_id, "seq": 1, "binding": "MAIL", "state": "COMPLETED",
            "container": False, "parent": None, "origin": "static", "after": [], "job_id": None,
            "child_run_id": None, "result": None, "error": None, "position": position,
            "created_at": 10, "updated_at": 20}  # fmt: skip
    return {**base, **fields}


@pytest.fixture
def flows() -> RecordingFlows:
    return RecordingFlows("gen1")


@pytest.fixture
async def runs_api(harness: Harness, flows: RecordingFlows) -> Any:
    app = harness.app(flows=("signup", "billing"), start_run=flows.start, run_control=flows.control)
    async with harness.client(app) as client:
        yield client


async def test_without_flows_runs_answer_501_or_empty(api: httpx.AsyncClient) -> None:
    #
    assert (await api.post("/api/runs", content=b"x")).json() == {"error": "run creation is not available"}
    for path in ("/api/runs/f:1/retry", "/api/runs/bad/cancel"):
        response = await api.post(path)
        assert (response.status_code, response.json()) == (501, {"error": "run control is not available"})
    assert (await api.get("/api/runs")).json() == {"runs": [], "total": 0}
    assert (await api.get("/api/runs/f:1")).status_code == 404
    assert (await api.get("/api/flows")).json() == {"flows": []}


async def test_flows_are_sorted(runs_api: httpx.AsyncClient) -> None:
    # A-57, F-85
    assert (await runs_api.get("/api/flows")).json() == {"flows": ["billing", "signup"]}


async def test_runs_list_and_detail(harness: Harness, runs_api: httpx.AsyncClient) -> None:
    # F-86, F-87
    writer = D1ReadModelWriter(harness.db)
    await writer.upsert_runs([run("signup:a", updated_at=30), run("signup:b", state="FAILED", input=None),
                              run("billing:c", updated_at=30)])  # fmt: skip
    summary = '{"total":2,"succeeded":1,"failed":1}'
    await writer.upsert_run_nodes(
        [
            node("signup:b", "fan", 1, container=True, result=summary, job_id=None),
            node("signup:b", "first", 0, job_id="MAIL#0:j1", after=[]),
            node(
                "signup:b",
                "fan:x",
                2,
                parent="fan",
                origin="fanOut",
                after=["first"],
                state="FAILED",
                error="e",
            ),
        ]
    )
    await harness.db.run("UPDATE run_node SET after = 'nope' WHERE node_id = 'fan'")
    body = (await runs_api.get("/api/runs")).json()
    assert [r["id"] for r in body["runs"]] == ["signup:a", "billing:c", "signup:b"] and body["total"] == 3
    assert set(body["runs"][0]) == {"id", "flow", "state", "node_total", "node_done", "node_failed",
                                    "created_at", "updated_at"}  # fmt: skip
    assert [r["id"] for r in (await runs_api.get("/api/runs?state=FAILED")).json()["runs"]] == ["signup:b"]
    assert [r["id"] for r in (await runs_api.get("/api/runs?flow=billing&limit=0")).json()["runs"]] == [
        "billing:c"
    ]
    assert [r["id"] for r in (await runs_api.get("/api/runs?limit=1&offset=1")).json()["runs"]] == [
        "billing:c"
    ]
    detail = (await runs_api.get("/api/runs/signup:b")).json()
    assert detail["run"]["retryable"] is True and detail["run"]["input"] == "null"
    assert detail["run"]["parent_run_id"] is None
    assert [n["id"] for n in detail["nodes"]] == ["first", "fan", "fan:x"]
    fan = detail["nodes"][1]
    assert fan["container"] is True and fan["after"] == [] and json.loads(fan["result"])["total"] == 2
    assert detail["nodes"][2]["after"] == ["first"] and detail["nodes"][2]["parent"] == "fan"
    assert (await runs_api.get("/api/runs/signup:a")).json()["run"]["retryable"] is False
    missing = await runs_api.get("/api/runs/signup:zzz")
    assert (missing.status_code, missing.json()) == (404, {"error": "not found"})


async def test_run_projection_is_seq_guarded(harness: Harness, runs_api: httpx.AsyncClient) -> None:
    # F-84: a stale snapshot never overwrites; flow and created_at never change.
    writer = D1ReadModelWriter(harness.db)
    await writer.upsert_runs([run("signup:a", seq=5, state="COMPLETED")])
    late = run("signup:a", seq=6, flow="x", created_at=99, state="FAILED")
    await writer.upsert_runs([run("signup:a", seq=4, state="RUNNING"), late])
    detail = (await runs_api.get("/api/runs/signup:a")).json()["run"]
    assert (detail["state"], detail["flow"], detail["created_at"]) == ("FAILED", "signup", 10)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "body must be an object"),
        ([], "flow is required"),
        ({"flow": ""}, "flow is required"),
        ({"flow": "nope", "input": 1}, "unknown flow: nope"),
        ({"flow": "signup"}, "input is required"),
        ({"flow": "signup", "input": 1, "id": 5}, "id must be a string"),
        ({"flow": "signup", "input": 1, "deadlineMs": 0}, "deadlineMs must be a positive integer"),
        ({"flow": "signup", "input": 1, "deadlineMs": 1.5}, "deadlineMs must be a positive integer"),
        ({"flow": "signup", "input": 1, "deadlineMs": None}, "deadlineMs must be a positive integer"),
        ({"flow": "signup", "input": 1, "id": "a b"}, "invalid run id"),
    ],
)
async def test_start_run_validation(
    flows: RecordingFlows, runs_api: httpx.AsyncClient, body: Any, message: str
) -> None:
    # A-62, A-63 (port: invalid id -> 400)
    response = await runs_api.post("/api/runs", content=json.dumps(body).encode())
    assert (response.status_code, response.json()) == (400, {"error": message})
    assert flows.started == []


async def test_start_run_success(flows: RecordingFlows, runs_api: httpx.AsyncClient) -> None:
    # 201 {"id"}; empty id means generated; deadlineMs passed through as an integer.
    response = await runs_api.post(
        "/api/runs", json={"flow": "signup", "input": None, "id": "", "deadlineMs": 5.0}
    )
    assert (response.status_code, response.json()) == (201, {"id": "signup:gen1"})
    response = await runs_api.post("/api/runs", json={"flow": "signup", "input": {"a": 1}, "id": "u-1"})
    assert response.json() == {"id": "signup:u-1"}
    assert flows.started == [("signup", None, None, 5), ("signup", {"a": 1}, "u-1", None)]


async def test_run_control_outcomes(flows: RecordingFlows, runs_api: httpx.AsyncClient) -> None:
    # A-64, F-89: malformed id 400; ok 200; invalid-state 409; gone 410 (flow not checked).
    flows.outcomes = {"signup:a": {"ok": True}, "signup:b": {"ok": False, "reason": "invalid-state"}}
    for bad in ("nocolon", "a:b:c", "a%20b:c", ":x"):
        response = await runs_api.post(f"/api/runs/{bad}/retry")
        assert (response.status_code, response.json()) == (400, {"error": "invalid run id"}), bad
    assert (await runs_api.post("/api/runs/signup:a/retry")).json() == {"ok": True}
    busy = await runs_api.post("/api/runs/signup%3Ab/cancel")
    assert (busy.status_code, busy.json()) == (
        409,
        {"ok": False, "error": "not allowed in the current state"},
    )
    gone = await runs_api.post("/api/runs/unknownflow:x/cancel")
    assert (gone.status_code, gone.json()) == (410, {"ok": False, "error": RUN_GONE})
    assert flows.controlled == [("signup:a", "retry"), ("signup:b", "cancel"), ("unknownflow:x", "cancel")]


SCHEDULE = {"name": "b-nightly", "kind": "job", "target": "MAIL", "every_ms": None, "cron": "0 3 * * *",
            "overlap": "skip", "next_run_at": NOW, "last_run_at": None, "last_fired_at": None,
            "last_job_id": None, "last_run_id": None, "last_skipped_at": None, "skipped_count": 0,
            "last_error": None}  # fmt: skip


async def test_schedules_read_live_and_sorted(harness: Harness, api: httpx.AsyncClient) -> None:
    # S-21
    assert (await api.get("/api/schedules")).json() == {"error": "schedules are not available"}

    async def schedules(env: Any) -> list[dict[str, Any]]:
        return [
            SCHEDULE,
            {**SCHEDULE, "name": "a-hourly", "kind": "flow", "every_ms": 3_600_000, "cron": None},
        ]

    async with harness.client(harness.app(schedules=schedules)) as client:
        body = (await client.get("/api/schedules")).json()
    assert [s["name"] for s in body["schedules"]] == ["a-hourly", "b-nightly"]
    assert set(body["schedules"][0]) == set(SCHEDULE)
