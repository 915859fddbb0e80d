"""Flows on the ``TsumugiRun`` Durable Object, in the real Worker (F-rules).

GREETINGS fans out over the names ListNames returns; PIPELINE runs GREETINGS as a child run; TIMED has a
deadline. A paused ListNames binding holds a run's first node back, so cancelling (F-69) and the deadline
(F-73, F-74) meet a run that is still waiting, and resuming it (F-77) can succeed once the pause is lifted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.workerd.harness import Workers, quoted, request

pytestmark = pytest.mark.workerd

LIST_NAMES_POLICY = "/api/bindings/ListNames/policy"


def _start(workers: Workers, flow: str, input: object, **fields: object) -> str:
    answer = workers.api("POST", "/api/runs", {"flow": flow, "input": input, **fields})
    assert answer.status == 201, answer
    run_id = str(answer.body["id"])
    assert run_id.startswith(f"{flow}:")
    return run_id


def test_greetings_fans_out_over_the_listed_names_and_completes(workers: Workers) -> None:
    run_id = _start(workers, "GREETINGS", {"prefix": "fan"})
    run = workers.wait_run(run_id)
    assert run["state"] == "COMPLETED", run
    nodes = {node["id"]: node for node in run["nodes"]}
    children = [node for node in run["nodes"] if node["origin"] == "fanOut"]
    assert all(node["parent"] == "greet" and node["state"] == "COMPLETED" for node in children)
    # A job node's result lives in the jobs read model; a container holds its summary (F-29, D-rules).
    greeted = [json.loads(workers.wait_job(node["job_id"])["result"])["greeted"] for node in children]
    assert sorted(greeted) == ["fan-1", "fan-2", "fan-3"]
    assert json.loads(nodes["greet"]["result"]) == {"total": 3, "succeeded": 3, "failed": 0}
    assert nodes["greet"]["container"] is True and nodes["report"]["state"] == "COMPLETED"
    assert run["node_total"] == len(run["nodes"]) == 6 and run["node_failed"] == 0


def test_the_example_route_starts_a_greetings_run(workers: Workers) -> None:
    answer = request(workers.url + "/greetings/route", "POST")
    assert answer.status == 201, answer
    run = workers.wait_run(answer.body["id"])
    assert run["state"] == "COMPLETED" and json.loads(run["input"]) == {"prefix": "route"}


def test_pipeline_runs_greetings_as_a_child_run(workers: Workers) -> None:
    run_id = _start(workers, "PIPELINE", {"prefix": "sub"})
    run = workers.wait_run(run_id)
    assert run["state"] == "COMPLETED", run
    greetings = next(node for node in run["nodes"] if node["id"] == "greetings")
    child_id = greetings["child_run_id"]
    assert child_id and greetings["state"] == "COMPLETED"
    child = workers.wait_run(child_id)
    assert child["state"] == "COMPLETED"
    assert (child["parent_run_id"], child["parent_node_id"]) == (run_id, "greetings")  # F-16, F-63


@pytest.fixture
def list_names_paused(workers: Workers) -> Iterator[None]:
    answer = workers.api("POST", LIST_NAMES_POLICY, {"paused": True})
    assert answer.status == 200, answer
    yield
    assert workers.api("POST", LIST_NAMES_POLICY + "/reset", {}).status == 200


def test_a_waiting_run_is_cancelled(workers: Workers, list_names_paused: None) -> None:
    run_id = _start(workers, "GREETINGS", {"prefix": "cancelled"})
    assert workers.wait_run(run_id, frozenset({"RUNNING"}))["state"] == "RUNNING"
    answer = workers.api("POST", f"/api/runs/{quoted(run_id)}/cancel", {})
    assert (answer.status, answer.body) == (200, {"ok": True})
    run = workers.wait_run(run_id)
    assert run["state"] == "CANCELLED", run
    assert {node["id"]: node["state"] for node in run["nodes"]}["list"] == "CANCELLED"  # F-69: its job waited
    again = workers.api("POST", f"/api/runs/{quoted(run_id)}/cancel", {})
    assert again.status == 409  # F-68: no longer RUNNING


def test_a_run_past_its_deadline_fails_and_resumes_once_its_node_can_run(
    workers: Workers, list_names_paused: None
) -> None:
    run_id = _start(workers, "TIMED", {"prefix": "late"}, deadlineMs=1500)
    failed = workers.wait_run(run_id)
    assert failed["state"] == "FAILED", failed
    node = next(node for node in failed["nodes"] if node["id"] == "list")
    assert node["state"] == "FAILED" and node["error"] == "run deadline exceeded: 1500ms"  # F-74
    assert failed["retryable"] is True

    assert workers.api("POST", LIST_NAMES_POLICY, {"paused": False}).status == 200
    answer = workers.api("POST", f"/api/runs/{quoted(run_id)}/retry", {})
    assert (answer.status, answer.body) == (200, {"ok": True})  # F-77: a new deadline, the node reset
    resumed = workers.wait_run(run_id, frozenset({"COMPLETED"}), timeout_s=60)
    listed = next(node for node in resumed["nodes"] if node["id"] == "list")
    assert listed["job_id"] != node["job_id"]  # F-78: reset job nodes get new job ids
    assert json.loads(workers.wait_job(listed["job_id"])["result"]) == {
        "names": ["late-1", "late-2", "late-3"]
    }
