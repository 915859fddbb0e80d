"""The example app's flows on the local runtime, read back over REST (F-15, F-16, F-33, F-63, A-60)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.local.flow_support import TOKEN, nodes_by_id, path_id, rest_client, settled_run

from tsumugi.runtimes.local.app_loader import LoadedApp, load_app
from tsumugi.runtimes.local.http_app import build_http_app
from tsumugi.runtimes.local.runtime import LocalRuntime

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"}


@pytest.fixture(scope="module")
def example() -> LoadedApp:
    return load_app()  # this repository's src/app.py


@pytest.fixture
async def runtime(example: LoadedApp, tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    async with LocalRuntime(
        example.tsumugi,
        tmp_path / "state",
        exports=example.exports,
        vars={"TSUMUGI_TOKEN": TOKEN},
        cron=False,
    ) as started:
        yield started


async def test_greetings_completes_with_the_fan_out_aggregate(
    example: LoadedApp, runtime: LocalRuntime
) -> None:
    tsumugi = example.tsumugi
    run_id = await tsumugi.start(runtime.env, "GREETINGS", {"prefix": "ann"}, id="g1")
    assert run_id == "GREETINGS:g1"  # F-7
    async with rest_client(tsumugi.asgi(runtime.env)) as client:
        detail = await settled_run(client, run_id, "COMPLETED")  # F-33
        nodes = nodes_by_id(detail)
        # F-15: three children keyed by index, their container, and the report after it
        assert set(nodes) == {"list", "greet", "greet:0", "greet:1", "greet:2", "report"}
        assert {node["state"] for node in nodes.values()} == {"COMPLETED"}
        assert (nodes["greet"]["container"], nodes["greet:1"]["origin"], nodes["greet:1"]["parent"]) == (
            True,
            "fanOut",
            "greet",
        )
        assert nodes["report"]["after"] == ["greet"]
        child = (await client.get(f"/api/jobs/{path_id(nodes['greet:2']['job_id'])}")).json()["job"]
        assert json.loads(child["result"]) == {
            "greeted": "ann-3"
        }  # ADR-0035: a child's result stays on its job
        assert (detail["run"]["node_total"], detail["run"]["node_failed"]) == (6, 0)  # F-26
        # F-15: the report's payload is the container's summary (total / failed)
        report = (await client.get(f"/api/jobs/{path_id(nodes['report']['job_id'])}")).json()["job"]
        assert json.loads(report["payload"]) == {"total": 3, "failed": 0}
        assert report["state"] == "COMPLETED"
        listed = (await client.get("/api/runs", params={"flow": "GREETINGS"})).json()
        assert [run["id"] for run in listed["runs"]] == [run_id]


async def test_pipeline_runs_greetings_as_a_child_run(example: LoadedApp, runtime: LocalRuntime) -> None:
    tsumugi = example.tsumugi
    run_id = await tsumugi.start(runtime.env, "PIPELINE", {"prefix": "bo"}, id="p1")
    async with rest_client(tsumugi.asgi(runtime.env)) as client:
        detail = await settled_run(client, run_id, "COMPLETED")
        nodes = nodes_by_id(detail)
        child_id = "GREETINGS:p1-greetings"  # F-8
        assert nodes["greetings"]["child_run_id"] == child_id
        assert [nodes["greetings"]["state"], nodes["summary"]["state"]] == ["COMPLETED", "COMPLETED"]  # F-63
        child = await settled_run(client, child_id, "COMPLETED")
        assert (child["run"]["parent_run_id"], child["run"]["parent_node_id"]) == (run_id, "greetings")
        assert len(child["nodes"]) == 6


async def test_timed_pins_its_ten_minute_deadline(example: LoadedApp, runtime: LocalRuntime) -> None:
    # F-11, F-20 step 4: the flow's deadline_ms applies when start gives none
    run_id = await example.tsumugi.start(runtime.env, "TIMED", {"prefix": "t"})
    coordinator = runtime.env.RUN.coordinators.coordinator(run_id)
    stored = coordinator.ctx.store.run()
    assert stored.deadline_ms == 600_000
    assert stored.deadline_at == stored.created_at + 600_000
    async with rest_client(example.tsumugi.asgi(runtime.env)) as client:
        await settled_run(client, run_id, "COMPLETED")


async def test_the_example_route_starts_greetings(example: LoadedApp, runtime: LocalRuntime) -> None:
    async with rest_client(build_http_app(example, runtime.env)) as client:
        created = await client.post("/greetings/cy")
        assert created.status_code == 201  # F-22's shape
        run_id = created.json()["id"]
        assert run_id.startswith("GREETINGS:")
        detail = await settled_run(client, run_id, "COMPLETED")
        assert json.loads(detail["run"]["input"]) == {"prefix": "cy"}
        assert {node["state"] for node in detail["nodes"]} <= TERMINAL


async def test_a_repeated_start_with_the_same_id_creates_one_run(
    example: LoadedApp, runtime: LocalRuntime
) -> None:
    # F-20 step 1, F-21: the second start returns the existing run and keeps the first input
    tsumugi = example.tsumugi
    first = await tsumugi.start(runtime.env, "GREETINGS", {"prefix": "first"}, id="same")
    second = await tsumugi.start(runtime.env, "GREETINGS", {"prefix": "second"}, id="same")
    assert first == second
    async with rest_client(tsumugi.asgi(runtime.env)) as client:
        detail = await settled_run(client, first, "COMPLETED")
        assert json.loads(detail["run"]["input"]) == {"prefix": "first"}
        assert (await client.get("/api/runs")).json()["total"] == 1
