"""Sleep and wait-for-event nodes end to end on the local runtime, across restarts (ADR-0147, ADR-0148)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from tests.local.flow_support import TOKEN, nodes_by_id, path_id, rest_client, run_detail, settled_run, until

import tsumugi
from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.rest_client import AsyncTsumugiClient
from tsumugi.runtimes.local.runtime import LocalRuntime

START = 1_700_000_000_000
HOUR = 3_600_000
SHIPPED: list[Any] = []
RELEASE = asyncio.Event()


class Ship(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        SHIPPED.append(payload)


class Gate(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        await RELEASE.wait()


PERFORMERS = {"Ship": Ship, "Gate": Gate}
flow = create_flow(PERFORMERS)


@flow
def SLEEPY(f: FlowBuilder) -> None:
    nap = f.sleep("cool_down", ms=HOUR)
    f.node("ship", "Ship", after={"nap": nap}, input=lambda i, d: {"order": i["order"]})


@flow
def APPROVAL(f: FlowBuilder) -> None:
    ok = f.wait_for_event("approval", event="order.approved", timeout_ms=24 * HOUR)
    f.node("ship", "Ship", after={"ok": ok}, input=lambda i, d: {"by": d["ok"]["by"]})


@flow
def EARLY(f: FlowBuilder) -> None:
    gate = f.node("gate", "Gate", input=lambda i, d: {})
    ok = f.wait_for_event("approval", after={"gate": gate}, event="order.approved")
    f.node("ship", "Ship", after={"ok": ok}, input=lambda i, d: {"by": d["ok"]["by"]})


APP = define_tsumugi(
    performers=PERFORMERS,
    flows={"SLEEPY": SLEEPY, "APPROVAL": APPROVAL, "EARLY": EARLY},
    auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
)


def runtime(state: Path, clock: FixedClock) -> LocalRuntime:
    return LocalRuntime(
        APP, state, clock=clock, exports=PERFORMERS, vars={"TSUMUGI_TOKEN": TOKEN}, cron=False
    )


async def waiting_node(client: httpx.AsyncClient, run_id: str, node_id: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        detail = await run_detail(client, run_id)
        node = nodes_by_id(detail).get(node_id) if detail else None
        return node if node is not None and node["state"] == "RUNNING" else None

    found: dict[str, Any] = await until(check, f"{run_id} {node_id} waiting")
    return found


async def test_a_sleep_survives_a_restart_and_completes_when_its_time_comes(tmp_path: Path) -> None:
    SHIPPED.clear()
    clock = FixedClock(START)
    async with runtime(tmp_path / "state", clock) as first, rest_client(APP.asgi(first.env)) as client:
        run_id = await APP.start(first.env, "SLEEPY", {"order": 7}, id="s1")
        nap = await waiting_node(client, run_id, "cool_down")
        assert (nap["wait"], nap["wake_at"], nap["job_id"]) == ("sleep", START + HOUR, None)

        # The run's alarm, no job of its own; armed once the tick that listed the node has ended.
        async def armed() -> bool:
            return first.alarms.get(f"runs/{run_id}") == START + HOUR

        await until(armed, "the run's alarm at the end of the sleep")
    clock.advance(HOUR)
    async with runtime(tmp_path / "state", clock) as second, rest_client(APP.asgi(second.env)) as client:
        await second.alarms.fire_due()
        done = await settled_run(client, run_id, "COMPLETED")
        assert nodes_by_id(done)["cool_down"]["state"] == "COMPLETED"
    assert SHIPPED == [{"order": 7}]


async def test_a_wait_survives_a_restart_and_an_event_over_rest_completes_the_run(tmp_path: Path) -> None:
    SHIPPED.clear()
    clock = FixedClock(START)
    async with runtime(tmp_path / "state", clock) as first, rest_client(APP.asgi(first.env)) as client:
        run_id = await APP.start(first.env, "APPROVAL", {}, id="a1")
        approval = await waiting_node(client, run_id, "approval")
        assert (approval["wait"], approval["wait_event"]) == ("event", "order.approved")
        assert approval["wake_at"] == START + 24 * HOUR
    async with runtime(tmp_path / "state", clock) as second, rest_client(APP.asgi(second.env)) as client:
        path = f"/api/runs/{path_id(run_id)}/events/order.approved"
        sent = await client.post(path, json={"by": "ana"})
        assert (sent.status_code, sent.json()) == (
            200,
            {"accepted": True, "node": "approval", "state": "COMPLETED"},
        )
        done = await settled_run(client, run_id, "COMPLETED")
        assert nodes_by_id(done)["approval"]["state"] == "COMPLETED"
        again = await client.post(path, json={"by": "bo"})
        assert (again.status_code, again.json()) == (
            409,
            {"accepted": False, "node": "approval", "error": "already satisfied"},
        )
        unknown = await client.post(f"/api/runs/{path_id(run_id)}/events/order.shipped", json={})
        assert (unknown.status_code, unknown.json()["error"]) == (
            404,
            "no node of this run waits for this event",
        )
        gone = await client.post("/api/runs/APPROVAL:nobody/events/order.approved", json={})
        assert (gone.status_code, gone.json()) == (404, {"error": "not found"})
        bad = await client.post(f"/api/runs/{path_id(run_id)}/events/no%20spaces", json={})
        assert (bad.status_code, bad.json()) == (400, {"error": "invalid event name"})
        broken = await client.post(path, content=b"{not json")
        assert (broken.status_code, broken.json()) == (400, {"error": "body must be valid JSON"})
    assert SHIPPED == [{"by": "ana"}]


async def test_an_early_event_from_the_client_is_kept_and_taken(tmp_path: Path) -> None:
    SHIPPED.clear()
    RELEASE.clear()
    clock = FixedClock(START)
    async with runtime(tmp_path / "state", clock) as rt, rest_client(APP.asgi(rt.env)) as client:
        run_id = await APP.start(rt.env, "EARLY", {}, id="e1")
        transport = httpx.ASGITransport(app=APP.asgi(rt.env))
        async with AsyncTsumugiClient("http://local", TOKEN, transport=transport) as api:
            kept = await api.send_event(run_id, "order.approved", {"by": "early"})
            assert kept == {"accepted": True, "node": "approval", "state": "PENDING"}
            refused = await api.send_event(run_id, "order.approved", {"by": "late"})
            assert refused == {"accepted": False, "node": "approval", "error": "already satisfied"}
        direct = await tsumugi.send_event(rt.env, run_id, "order.approved", {"by": "again"})
        assert direct == {"ok": False, "reason": "already-satisfied", "node": "approval"}
        RELEASE.set()
        await settled_run(client, run_id, "COMPLETED")
    assert SHIPPED == [{"by": "early"}]
