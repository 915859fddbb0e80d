"""Debounce and throttle through POST /api/jobs on a real `tsumugi dev` (ADR-0149, ADR-0150)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.local.conftest import DevProcess, wait_for
from tests.local.flow_support import HEADERS, TOKEN, path_id

DEADLINE_S = 30.0
AN_HOUR_MS = 3_600_000  # far enough that no debounced job runs during the test


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def server(state_dir: Path) -> Iterator[DevProcess]:
    dev = DevProcess(None, state_dir, {"TSUMUGI_TOKEN": TOKEN})
    yield dev
    dev.terminate()


def post(dev: DevProcess, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(base_url=dev.url, headers=HEADERS, timeout=10) as client:
        return client.post("/api/jobs", json={"binding": "Hello", **body})


def payload_of(dev: DevProcess, job_id: str, expected: Any) -> None:
    def seen() -> bool | None:
        with httpx.Client(base_url=dev.url, headers=HEADERS, timeout=10) as client:
            answer = client.get(f"/api/jobs/{path_id(job_id)}")
        return True if answer.status_code == 200 and answer.json()["job"]["payload"] == expected else None

    wait_for(seen, DEADLINE_S, f"{job_id} with payload {expected}")


def test_a_second_post_debounces_into_the_first_job(server: DevProcess) -> None:
    first = post(server, {"payload": {"n": 1}, "debounceKey": "user-7", "debounceMs": AN_HOUR_MS})
    assert first.status_code == 201, first.text
    job_id = first.json()["id"]
    second = post(server, {"payload": {"n": 2}, "debounceKey": "user-7", "debounceMs": AN_HOUR_MS})
    assert second.status_code == 200, second.text
    body = second.json()
    assert (body["id"], body["debounced"]) == (job_id, True)
    payload_of(server, job_id, '{"n":2}')


def test_refused_combinations_are_a_400(server: DevProcess) -> None:
    answer = post(server, {"payload": 1, "debounceKey": "k"})
    assert (answer.status_code, answer.json()) == (400, {"error": "debounce_key needs debounce_ms"})
    answer = post(server, {"payload": 1, "throttleKey": "k", "throttle": {"tokens": 0, "intervalMs": 10}})
    assert answer.status_code == 400 and "tokens" in answer.json()["error"]


def test_throttle_drop_survives_a_restart(state_dir: Path, server: DevProcess) -> None:
    rule = {"tokens": 1, "intervalMs": AN_HOUR_MS, "onExcess": "drop"}
    first = post(server, {"payload": 1, "throttleKey": "tenant-a", "throttle": rule})
    assert first.status_code == 201, first.text
    second = post(server, {"payload": 2, "throttleKey": "tenant-a", "throttle": rule})
    assert second.status_code == 200 and second.json()["dropped"] is True and second.json()["id"] is None
    server.terminate()
    again = DevProcess(None, state_dir, {"TSUMUGI_TOKEN": TOKEN})
    try:
        third = post(again, {"payload": 3, "throttleKey": "tenant-a", "throttle": rule})
        assert (
            third.status_code == 200 and third.json()["dropped"] is True
        )  # the bucket is in the shard's SQLite
        other = post(again, {"payload": 4, "throttleKey": "tenant-b", "throttle": rule})
        assert other.status_code == 201
    finally:
        again.terminate()


def test_throttle_delay_schedules_the_next_slot(server: DevProcess) -> None:
    rule = {"tokens": 1, "intervalMs": AN_HOUR_MS, "onExcess": "delay"}
    assert post(server, {"payload": 1, "throttleKey": "d", "throttle": rule}).status_code == 201
    delayed = post(server, {"payload": 2, "throttleKey": "d", "throttle": rule})
    assert delayed.status_code == 201
    job_id = delayed.json()["id"]

    def scheduled() -> dict[str, Any] | None:
        with httpx.Client(base_url=server.url, headers=HEADERS, timeout=10) as client:
            answer = client.get(f"/api/jobs/{path_id(job_id)}")
        job = answer.json()["job"] if answer.status_code == 200 else None
        return job if job is not None else None

    job = wait_for(scheduled, DEADLINE_S, "the delayed job")
    assert job["state"] == "SCHEDULED" and job["run_after"] - job["created_at"] >= AN_HOUR_MS - 1000
