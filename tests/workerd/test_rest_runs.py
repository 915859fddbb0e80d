"""Flow runs over the REST API of the real Worker: start, read, list and control (A-57..A-65)."""

from __future__ import annotations

import json
import time
from typing import Final

import pytest
from tests.workerd.harness import Workers
from tests.workerd.rest_seed import TAG, Seeded
from tests.workerd.rest_wire import NOT_ALLOWED, assert_json, call, run_path, send, start_run

pytestmark = pytest.mark.workerd

TERMINAL_RUN: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED"})


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
NODE_KEYS: Final = {
    "id",
    "binding",
    "state",
    "container",
    "parent",
    "origin",
    "after",
    "job_id",
    "child_run_id",
    "result",
    "error",
    "position",
    "created_at",
    "updated_at",
    "wait",
    "wait_event",
    "wake_at",
}  # fmt: skip  (ADR-0147: what a waiting node waits for)
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
    # The resumed run has the same 1 ms deadline, so it fails again; once D1 shows that newer FAILED,
    # the coordinator already holds it, and a cancel is refused.
    deadline = time.monotonic() + 30
    again = failed
    while again["updated_at"] <= failed["updated_at"] and time.monotonic() < deadline:
        again = workers.wait_run(seeded.timed, frozenset({"FAILED"}))
    assert again["updated_at"] > failed["updated_at"], again
    assert_json(call(workers, "POST", run_path(seeded.timed, "cancel")), 409, NOT_ALLOWED)


def test_cancel_a_running_run(workers: Workers) -> None:
    # cancel from RUNNING; the run ends CANCELLED and is not retryable (only FAILED is).
    run_id = start_run(workers, {"flow": "GREETINGS", "input": {"prefix": f"cancel-{TAG}"}})
    assert_json(call(workers, "POST", run_path(run_id, "cancel")), 200, {"ok": True})
    run = workers.wait_run(run_id, TERMINAL_RUN)
    assert (run["state"], run["retryable"]) == ("CANCELLED", False)
    assert_json(call(workers, "POST", run_path(run_id, "retry")), 409, NOT_ALLOWED)
