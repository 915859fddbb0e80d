"""Kill `tsumugi dev` with SIGKILL during a running attempt, restart it, and check the guarantees.

J-106..J-108: an at-least-once job runs again and completes; an at-most-once job ends STALLED and is
never run twice. J-111, J-112: the reaper acts after timeout_ms + reaper_grace_ms of silence.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

CRASH_APP = str(Path(__file__).with_name("crash_app.py"))
OUTCOME_DEADLINE_S = 30.0  # the reaper needs timeout 3 s + grace 1 s; ticks and restarts add a little


def _starts(log: Path, job_id: str) -> int:
    return log.read_text(encoding="utf-8").splitlines().count(f"start {job_id}") if log.exists() else 0


def _state(dev: Any, job_id: str) -> str | None:
    with dev.client() as client:
        return client.get(f"/state/{quote(job_id, safe='')}").json()["state"]  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("guarantee", "final_state", "runs"),
    [("at-least-once", "COMPLETED", 2), ("at-most-once", "STALLED", 1)],
)
def test_a_killed_attempt_is_recovered_per_its_guarantee(
    tmp_path: Path, guarantee: str, final_state: str, runs: int, spawn_dev: Callable[..., Any], poll: Any
) -> None:
    state_dir, log = tmp_path / "state", tmp_path / "crash.log"
    first = spawn_dev(CRASH_APP, state_dir, {"CRASH_LOG": str(log), "CRASH_HANG": "1"})
    try:
        with first.client() as client:
            job_id = client.post(f"/enqueue/{guarantee}").json()["id"]
        poll(lambda: _starts(log, job_id) == 1, OUTCOME_DEADLINE_S, "the attempt to start")
        assert _state(first, job_id) == ("RUNNING" if guarantee == "at-most-once" else "QUEUED")  # J-107
    finally:
        first.kill()

    second = spawn_dev(CRASH_APP, state_dir, {"CRASH_LOG": str(log), "CRASH_HANG": "0"})
    try:
        poll(lambda: _state(second, job_id) == final_state, OUTCOME_DEADLINE_S, f"{job_id} {final_state}")
        assert _starts(log, job_id) == runs
    finally:
        code, output = second.terminate()
    assert code == 0, output
