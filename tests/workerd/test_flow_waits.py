"""Sleep and wait-for-event nodes on the ``TsumugiRun`` Durable Object in the real Worker (ADR-0147, 0148).

NAPPING sleeps a second before its ListNames node; APPROVAL waits for the event ``approved``, whose payload
names the list. The event reaches the run's Durable Object through ``POST /api/runs/:id/events/:event``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from tests.workerd.harness import Workers, quoted

pytestmark = pytest.mark.workerd

WAIT_S = 60.0  # the Worker serves within seconds; the margin is for a loaded machine


def _start(workers: Workers, flow: str, input: object) -> str:
    answer = workers.api("POST", "/api/runs", {"flow": flow, "input": input})
    assert answer.status == 201, answer
    return str(answer.body["id"])


def _waiting(workers: Workers, run_id: str, node_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = workers.run(run_id)
        node = next((n for n in (found or {}).get("nodes", []) if n["id"] == node_id), None)
        if node is not None and node["state"] == "RUNNING":
            return node
        time.sleep(0.1)  # real time: the Worker projects on its own alarm (noqa: sleep-ok)
    raise AssertionError(f"{run_id}: {node_id} never waited")


def test_a_sleeping_run_wakes_on_the_runs_alarm_and_completes(workers: Workers) -> None:
    run_id = _start(workers, "NAPPING", {"prefix": "napped"})
    run = workers.wait_run(run_id)
    assert run["state"] == "COMPLETED", run
    nodes = {node["id"]: node for node in run["nodes"]}
    assert (nodes["nap"]["state"], nodes["nap"]["wait"], nodes["nap"]["job_id"]) == (
        "COMPLETED",
        "sleep",
        None,
    )
    assert nodes["nap"]["wake_at"] >= run["created_at"] + 1_000
    listed = json.loads(workers.wait_job(nodes["list"]["job_id"])["result"])
    assert listed["names"][0].startswith("napped")


def test_a_waiting_run_takes_an_event_through_the_run_object(workers: Workers) -> None:
    run_id = _start(workers, "APPROVAL", {})
    node = _waiting(workers, run_id, "approval")
    assert (node["wait"], node["wait_event"]) == ("event", "approved")
    path = f"/api/runs/{quoted(run_id)}/events/approved"
    sent = workers.api("POST", path, {"prefix": "approved"})
    assert (sent.status, sent.body) == (200, {"accepted": True, "node": "approval", "state": "COMPLETED"})
    again = workers.api("POST", path, {"prefix": "twice"})
    assert (again.status, again.body) == (
        409,
        {"accepted": False, "node": "approval", "error": "already satisfied"},
    )
    run = workers.wait_run(run_id)
    assert run["state"] == "COMPLETED", run
    nodes = {n["id"]: n for n in run["nodes"]}
    listed = json.loads(workers.wait_job(nodes["list"]["job_id"])["result"])
    assert listed["names"][0].startswith("approved")
    unknown = workers.api("POST", f"/api/runs/{quoted(run_id)}/events/other", {})
    assert unknown.status == 404
