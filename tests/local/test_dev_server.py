"""`tsumugi dev` serving the example app: health, the example's routes, clean stop, resume after restart."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

TOKEN = "test-token"
DONE_DEADLINE_S = 30.0


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_example_app_serves_and_stops_cleanly(
    tmp_path: Path, signum: int, spawn_dev: Callable[..., Any]
) -> None:
    dev = spawn_dev(None, tmp_path / "state", {"TSUMUGI_TOKEN": TOKEN})  # no APP: the example app
    with dev.client() as anonymous, dev.client(TOKEN) as client:
        health = anonymous.get("/healthz")
        assert health.status_code == 200 and health.json()["ok"] is True
        assert anonymous.post("/hello/ann").status_code == 401  # the example's routes need the token
        created = client.post("/hello/ann")
        assert created.status_code == 201
        assert created.json()["id"].startswith("Hello#0:")  # J-12
    code, output = dev.terminate(signum)
    assert code == 0, output
    assert "tsumugi dev: stopped" in output


@pytest.mark.slow
def test_without_a_token_the_example_routes_stay_closed(
    tmp_path: Path, spawn_dev: Callable[..., Any]
) -> None:
    # J-9: fail-closed when no token is configured
    dev = spawn_dev(None, tmp_path / "state", {"TSUMUGI_TOKEN": ""})
    with dev.client("anything") as client:
        assert client.post("/hello/ann").status_code == 404


@pytest.mark.slow
def test_the_token_can_come_from_dev_vars(tmp_path: Path, spawn_dev: Callable[..., Any]) -> None:
    (tmp_path / ".dev.vars").write_text(f'TSUMUGI_TOKEN="{TOKEN}"\n', encoding="utf-8")
    dev = spawn_dev(None, tmp_path / "state", {"TSUMUGI_TOKEN": ""})
    with dev.client(TOKEN) as client:
        assert client.post("/hello", json={"name": "bo"}).status_code == 201


@pytest.mark.slow
def test_jobs_run_to_completion_and_survive_a_restart(
    tmp_path: Path, spawn_dev: Callable[..., Any], poll: Any
) -> None:
    state_dir = tmp_path / "state"
    app = str(Path(__file__).with_name("crash_app.py"))
    env = {"CRASH_LOG": str(tmp_path / "runs.log"), "CRASH_HANG": "0"}
    dev = spawn_dev(app, state_dir, env)
    with dev.client() as client:
        job_id = client.post("/enqueue/at-least-once").json()["id"]
        path = f"/state/{quote(job_id, safe='')}"
        poll(lambda: client.get(path).json()["state"] == "COMPLETED", DONE_DEADLINE_S, "COMPLETED")
    assert dev.terminate()[0] == 0
    again = spawn_dev(app, state_dir, env)
    with again.client() as client:
        assert client.get(path).json()["state"] == "COMPLETED"  # the shard file kept it
