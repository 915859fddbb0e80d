"""Cancelling and resuming runs on the local runtime, over REST (F-69, F-70, F-77, F-78, A-64, A-65)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.local.flow_support import TOKEN, nodes_by_id, path_id, rest_client, settled_run

from tsumugi.api import bearer_auth
from tsumugi.application import Tsumugi, define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime


class Counted(Performer):
    """Counts its attempts per node in ``ATTEMPTS``; fails while ``FAILING`` holds its node."""

    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, Any]:
        node = payload["node"]
        ATTEMPTS[node] = ATTEMPTS.get(node, 0) + 1
        if node in FAILING:
            raise Exception(f"{node} failed on purpose")
        return {"node": node}


class Held(Performer):
    """Heartbeats until cancellation is requested (J-69a)."""

    async def perform(self, payload: Any, ctx: JobContext) -> str:
        STARTED.set()
        while not (await ctx.heartbeat()).cancel_requested:
            await asyncio.sleep(0.01)  # a performer waiting to be cancelled (noqa: sleep-ok)
        return "stopped"


ATTEMPTS: dict[str, int] = {}
FAILING: set[str] = set()
STARTED = asyncio.Event()
PERFORMERS = {"Counted": Counted, "Held": Held}
flow = create_flow(PERFORMERS)


@flow
def CHAIN(f: FlowBuilder) -> None:
    first = f.node("first", "Counted", input=lambda i, d: {"node": "first"})
    second = f.node(
        "second", "Counted", after={"first": first}, input=lambda i, d: {"node": "second"}, max_attempts=1
    )
    f.node("third", "Counted", after={"second": second}, input=lambda i, d: {"node": "third"})


@flow
def HOLD(f: FlowBuilder) -> None:
    held = f.node("held", "Held", input=lambda i, d: {})
    f.node("later", "Counted", after={"held": held}, input=lambda i, d: {"node": "later"})


@pytest.fixture
def app() -> Tsumugi:
    ATTEMPTS.clear()
    FAILING.clear()
    return define_tsumugi(
        performers=PERFORMERS,
        flows={"CHAIN": CHAIN, "HOLD": HOLD},
        auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
    )


@pytest.fixture
async def runtime(app: Tsumugi, tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    async with LocalRuntime(
        app, tmp_path / "state", exports=PERFORMERS, vars={"TSUMUGI_TOKEN": TOKEN}, cron=False
    ) as started:
        yield started


async def test_a_failed_run_resumes_and_keeps_completed_nodes(app: Tsumugi, runtime: LocalRuntime) -> None:
    FAILING.add("second")
    async with rest_client(app.asgi(runtime.env)) as client:
        created = await client.post("/api/runs", json={"flow": "CHAIN", "input": {}, "id": "c1"})
        run_id = created.json()["id"]
        failed = await settled_run(client, run_id, "FAILED")  # F-33: a failed node fails the run
        nodes = nodes_by_id(failed)
        assert [nodes[n]["state"] for n in ("first", "second", "third")] == ["COMPLETED", "FAILED", "SKIPPED"]
        assert failed["run"]["retryable"] is True
        FAILING.clear()
        retried = await client.post(f"/api/runs/{path_id(run_id)}/retry")
        assert (retried.status_code, retried.json()) == (200, {"ok": True})  # F-77
        done = await settled_run(client, run_id, "COMPLETED")
        assert {node["state"] for node in done["nodes"]} == {"COMPLETED"}
        # F-78: the completed node was kept, the failed one ran again, the skipped one ran once
        assert ATTEMPTS == {"first": 1, "second": 2, "third": 1}
        again = await client.post(f"/api/runs/{path_id(run_id)}/retry")
        assert again.status_code == 409  # F-28: only a FAILED run resumes


async def test_cancel_stops_the_running_node_and_skips_the_rest(app: Tsumugi, runtime: LocalRuntime) -> None:
    STARTED.clear()
    async with rest_client(app.asgi(runtime.env)) as client:
        run_id = (await client.post("/api/runs", json={"flow": "HOLD", "input": {}})).json()["id"]
        await asyncio.wait_for(STARTED.wait(), timeout=30)
        cancelled = await client.post(f"/api/runs/{path_id(run_id)}/cancel")
        assert (cancelled.status_code, cancelled.json()) == (200, {"ok": True})  # F-69
        detail = await settled_run(client, run_id, "CANCELLED")  # F-70
        nodes = nodes_by_id(detail)
        assert nodes["later"]["state"] in {"CANCELLED", "SKIPPED"}
        assert "later" not in ATTEMPTS
        assert (await client.post(f"/api/runs/{path_id(run_id)}/cancel")).status_code == 409
        unknown = await client.post("/api/runs/HOLD:nobody/cancel")
        assert unknown.status_code == 410  # F-28: gone


async def test_an_unknown_run_answers_404_and_run_state_reads_none(
    app: Tsumugi, runtime: LocalRuntime
) -> None:
    # F-28, S-20: state() never creates a run; A-60
    assert await app.run_for(runtime.env, "CHAIN:ghost").state() is None
    async with rest_client(app.asgi(runtime.env)) as client:
        assert (await client.get("/api/runs/CHAIN:ghost")).status_code == 404
        assert (await client.get("/api/flows")).json() == {"flows": ["CHAIN", "HOLD"]}
