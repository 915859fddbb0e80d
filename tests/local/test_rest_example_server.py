"""The example app's REST API and dashboard from a real `tsumugi dev` on 127.0.0.1 (A-12..A-68, U-3).

One server per module; every test works on its own jobs and runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.local.conftest import DevProcess, wait_for
from tests.local.flow_support import HEADERS, TOKEN, path_id

DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    state_dir = tmp_path_factory.mktemp("rest") / "state"
    dev = DevProcess(None, state_dir, {"TSUMUGI_TOKEN": TOKEN})  # the default app: src/app.py
    yield dev
    code, output = dev.terminate()
    assert code == 0, output


@pytest.fixture
def client(server: DevProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=HEADERS, timeout=10) as opened:
        yield opened


def _job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    """The job's detail once the read model has it (J-195: it lags the shard by about one tick)."""

    def visible() -> dict[str, Any] | None:
        answer = client.get(f"/api/jobs/{path_id(job_id)}")
        if answer.status_code == 404:
            return None  # not projected yet
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()["job"]
        return job

    found: dict[str, Any] = wait_for(visible, DEADLINE_S, f"{job_id} in the read model")
    return found


def _until_state(client: httpx.Client, job_id: str, states: set[str]) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        answer = client.get(f"/api/jobs/{path_id(job_id)}")
        job = answer.json()["job"] if answer.status_code == 200 else None
        return job if job is not None and job["state"] in states else None

    found: dict[str, Any] = wait_for(check, DEADLINE_S, f"{job_id} in {sorted(states)}")
    return found


def _enqueue(client: httpx.Client, binding: str, payload: Any, **options: Any) -> str:
    created = client.post("/api/jobs", json={"binding": binding, "payload": payload, **options})
    assert created.status_code == 201, created.text
    job_id: str = created.json()["id"]
    return job_id


def test_the_api_is_closed_without_the_token(server: DevProcess) -> None:
    #
    answer = httpx.get(f"{server.url}/api/jobs", timeout=10)
    assert (answer.status_code, answer.json()) == (401, {"error": "unauthorized"})


def test_create_list_and_read_a_job(client: httpx.Client) -> None:
    job_id = _enqueue(client, "Hello", {"name": "rest"})
    assert job_id.startswith("Hello#0:")  # J-17
    job = _until_state(client, job_id, {"COMPLETED"})
    assert (job["binding"], job["attempts"]) == ("Hello", 1)
    listed = client.get("/api/jobs", params={"binding": "Hello"}).json()
    assert job_id in [entry["id"] for entry in listed["jobs"]]


def test_retry_a_failed_boom_job(client: httpx.Client) -> None:
    job_id = _enqueue(client, "Boom", {}, maxAttempts=1)
    failed = _until_state(client, job_id, {"FAILED"})
    assert failed["attempts"] == 1
    retried = client.post(f"/api/jobs/{path_id(job_id)}/retry")
    assert (retried.status_code, retried.json()) == (200, {"ok": True})  # J-131, A-43
    wait_for(lambda: _job(client, job_id)["attempts"] == 2, DEADLINE_S, "the retried attempt")
    assert _until_state(client, job_id, {"FAILED"})["attempts"] == 2
    refused = client.post(f"/api/jobs/{path_id(_enqueue(client, 'Hello', {}))}/retry")
    assert refused.status_code in {200, 409}  # a live or completed job is not retryable twice over
    gone = client.post(f"/api/jobs/{path_id('Boom#0:nothing-here')}/retry")
    assert gone.status_code == 410


def test_cancel_a_running_slow_job(client: httpx.Client) -> None:
    job_id = _enqueue(client, "Slow", {"steps": 60})
    # J-107: an at-least-once attempt shows QUEUED while it runs; its first heartbeat carries progress
    wait_for(lambda: _job(client, job_id)["progress"] is not None, DEADLINE_S, "the first heartbeat")
    cancelled = client.post(f"/api/jobs/{path_id(job_id)}/cancel")
    assert (cancelled.status_code, cancelled.json()) == (200, {"ok": True, "requested": True})  # J-135
    # J-69a: Slow sees cancel_requested at its next heartbeat and raises; a failure reported after
    # the request is not retried and the job ends CANCELLED (J-135, seed page)
    stopped = _until_state(client, job_id, {"CANCELLED", "COMPLETED", "FAILED", "SCHEDULED"})
    assert stopped["state"] == "CANCELLED"
    assert stopped["attempts"] == 1


def test_diagnostics_stats_and_metrics(client: httpx.Client) -> None:
    _until_state(client, _enqueue(client, "Greet", {"name": "m"}), {"COMPLETED"})
    diagnostics = client.get("/api/diagnostics").json()
    assert set(diagnostics["bindings"]) >= {"Hello", "Greet"}
    assert client.get("/api/stats").json()["byState"]["COMPLETED"] >= 1

    def greeted() -> dict[str, Any] | None:
        body: dict[str, Any] = client.get("/api/metrics", params={"binding": "Greet"}).json()
        return body if body["bindings"] else None

    metrics = wait_for(greeted, DEADLINE_S, "local metrics for Greet")  # M-9: read from the local table
    assert metrics["hours"] == 24 and metrics["bindings"][0]["binding"] == "Greet"


def test_pause_and_resume_a_binding(client: httpx.Client) -> None:
    # J-176, A-26: pause over REST pins the policy; reset returns to the static config
    paused = client.post("/api/bindings/Report/policy", json={"paused": True})
    try:
        assert paused.status_code == 200, paused.text
        assert paused.json()["settings"]["policy"]["paused"] is True
        job_id = _enqueue(client, "Report", {"total": 1, "failed": 0})
        diagnostics = client.get("/api/diagnostics").json()["bindings"]["Report"]
        assert diagnostics["active"] >= 1  # waiting, not dispatched
        assert _job(client, job_id)["state"] in {"SCHEDULED", "QUEUED"}
        assert _job(client, job_id)["attempts"] == 0
    finally:
        reset = client.post("/api/bindings/Report/policy/reset")
    assert reset.status_code == 200 and reset.json()["shards"] == 1
    assert _until_state(client, job_id, {"COMPLETED"})["attempts"] == 1


def test_a_greetings_run_over_rest(client: httpx.Client) -> None:
    created = client.post("/api/runs", json={"flow": "GREETINGS", "input": {"prefix": "api"}, "id": "rest1"})
    assert (created.status_code, created.json()) == (201, {"id": "GREETINGS:rest1"})  # F-22

    def completed() -> dict[str, Any] | None:
        answer = client.get("/api/runs/GREETINGS:rest1")
        body = answer.json() if answer.status_code == 200 else None
        done = body is not None and body["run"]["state"] == "COMPLETED"
        return body if done and all(n["state"] == "COMPLETED" for n in body["nodes"]) else None

    detail = wait_for(completed, DEADLINE_S, "GREETINGS:rest1 COMPLETED")
    assert sorted(node["id"] for node in detail["nodes"]) == [
        "greet",
        "greet:0",
        "greet:1",
        "greet:2",
        "list",
        "report",
    ]
    flows = ["APPROVAL", "GREETINGS", "NAPPING", "PIPELINE", "TIMED"]
    assert client.get("/api/flows").json() == {"flows": flows}
    schedules = client.get("/api/schedules").json()["schedules"]
    assert [entry["name"] for entry in schedules] == ["nightly", "ping-hello", "poll-names"]  # S-21
    bad = client.post("/api/runs", json={"flow": "NOPE", "input": {}})
    assert bad.status_code == 400


def test_the_example_routes_and_the_dashboard(server: DevProcess, client: httpx.Client) -> None:
    hello = client.post("/hello/route")
    assert hello.status_code == 201
    _until_state(client, hello.json()["id"], {"COMPLETED"})
    run = client.post("/greetings", json={"prefix": "route"})
    assert run.status_code == 201 and run.json()["id"].startswith("GREETINGS:")
    page = httpx.get(f"{server.url}/", timeout=10)  # U-3: no auth for the page itself
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '{"tokenCookie":"tsumugi_token"}' in page.text  # U-2: the bearer auth's cookie
    cookie_auth = httpx.get(f"{server.url}/api/flows", cookies={"tsumugi_token": TOKEN}, timeout=10)
    assert cookie_auth.status_code == 200  # the dashboard's cookie authenticates
