"""SIGKILL `tsumugi dev` in the middle of a run, restart it, and the run completes losing nothing.

F-45, F-56 and ADR-0101: run state, its alarm and the shard's run events are on disk; J-106, J-111: the
killed at-least-once attempts are reaped and run again; completed nodes never run twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.local.flow_support import HEADERS, TOKEN, path_id

CRASH_APP = str(Path(__file__).with_name("crash_flow_app.py"))
OUTCOME_DEADLINE_S = 40.0  # the reaper acts after timeout 3 s + grace 1 s; the restart adds a few seconds
RUN_ID = "CRASHY:k1"


def _starts(log: Path) -> Counter[str]:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return Counter(line.removeprefix("start ") for line in lines)


def _run(dev: Any) -> dict[str, Any] | None:
    with dev.client(TOKEN) as client:
        answer = client.get(f"/api/runs/{path_id(RUN_ID)}")
    return answer.json() if answer.status_code == 200 else None  # type: ignore[no-any-return]


@pytest.mark.slow
def test_a_killed_run_resumes_after_a_restart(
    tmp_path: Path, spawn_dev: Callable[..., Any], poll: Any
) -> None:
    state_dir, log = tmp_path / "state", tmp_path / "crash.log"
    env = {"CRASH_LOG": str(log), "TSUMUGI_TOKEN": TOKEN}
    first = spawn_dev(CRASH_APP, state_dir, {**env, "CRASH_HANG": "1"})
    try:
        with first.client() as client:
            created = client.post(
                "/api/runs", headers=HEADERS, json={"flow": "CRASHY", "input": {}, "id": "k1"}
            )
        assert (created.status_code, created.json()) == (201, {"id": RUN_ID})  # F-22
        poll(lambda: sum(_starts(log)[f"each-{n}"] for n in range(3)) == 3, OUTCOME_DEADLINE_S, "3 children")
        detail = poll(lambda: _run(first), OUTCOME_DEADLINE_S, "the run in the read model")
        assert detail["run"]["state"] == "RUNNING"
    finally:
        first.kill()  # SIGKILL with three attempts in flight

    second = spawn_dev(CRASH_APP, state_dir, {**env, "CRASH_HANG": "0"})
    try:

        def completed() -> dict[str, Any] | None:
            detail = _run(second)
            return detail if detail is not None and detail["run"]["state"] == "COMPLETED" else None

        detail = poll(completed, OUTCOME_DEADLINE_S, f"{RUN_ID} COMPLETED")
        states = {node["id"]: node["state"] for node in detail["nodes"]}
        assert states == dict.fromkeys(["first", "each", "each:0", "each:1", "each:2", "tally"], "COMPLETED")
        # Nothing lost, nothing repeated that had finished: the killed attempts ran again (at-least-once)
        assert _starts(log) == {"first": 1, "each-0": 2, "each-1": 2, "each-2": 2, "tally": 1}
    finally:
        code, output = second.terminate()
    assert code == 0, output
