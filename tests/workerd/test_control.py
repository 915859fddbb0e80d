"""Running jobs under control, in the real Worker: progress and cancel, timeouts, the reaper, policy.

Rules: J-69a/J-135 (heartbeat progress, cancel while running), J-74 (consumer timeout), J-110..J-112 (the
reaper's silence deadline and decisions), J-149b/J-176 (pause, policy patch and reset), J-185
(diagnostics).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tests.workerd.harness import Workers

pytestmark = pytest.mark.workerd


def _with_progress(workers: Workers, job_id: str) -> dict[str, object]:
    """The job once the read model shows heartbeat progress (an at-least-once job stays QUEUED)."""
    deadline = time.monotonic() + 30
    while True:
        job = workers.wait_job(job_id, frozenset({"QUEUED"}))
        if job["progress"] is not None or time.monotonic() > deadline:
            return job


def test_a_slow_job_reports_progress_and_is_cancelled_while_running(workers: Workers) -> None:
    job_id = workers.enqueue("Slow", {"steps": 30})
    running = _with_progress(workers, job_id)
    assert running["progress"] == 1 / 30, running  # J-64: the first beat is sent, later ones throttled
    answer = workers.api("POST", f"/api/jobs/{job_id.replace('#', '%23')}/cancel", {})
    assert (answer.status, answer.body) == (200, {"ok": True, "requested": True})  # J-135
    # Slow learns of it from its next sent heartbeat (at most 5 s later) and raises: no retry (J-135).
    job = workers.wait_job(job_id, frozenset({"CANCELLED", "COMPLETED", "FAILED"}), timeout_s=30)
    assert job["state"] == "CANCELLED", job
    assert "cancelled after step" in job["attempts_log"][0]["error"]


def test_an_attempt_that_outlives_its_timeout_fails_with_the_timeout_error(workers: Workers) -> None:
    job_id = workers.companion_enqueue(
        {"binding": "Slow", "payload": {"steps": 3}, "timeout_ms": 400, "max_attempts": 1}
    )
    job = workers.wait_job(job_id, frozenset({"FAILED"}), timeout_s=30)
    error = job["attempts_log"][0]["error"]
    assert error == f"TsumugiTimeoutError: job timed out ({job_id}, 400ms)", error  # J-74


@pytest.fixture
def slow_policy(workers: Workers) -> Iterator[str]:
    """The Slow binding's policy, returned to its static settings afterwards (J-176 reset)."""
    yield "/api/bindings/Slow/policy"
    answer = workers.api("POST", "/api/bindings/Slow/policy/reset", {})
    assert answer.status == 200, answer


def test_the_reaper_stalls_a_silent_at_most_once_attempt_after_the_grace(
    workers: Workers, slow_policy: str
) -> None:
    # J-111: silence deadline = dispatch + timeout_ms (0: no consumer timer) + reaper_grace_ms; J-112 E9.
    answer = workers.api("POST", slow_policy, {"reaperGraceMs": 300})
    assert answer.status == 200 and answer.body["settings"]["policy"]["reaperGraceMs"] == 300, answer
    job_id = workers.companion_enqueue(
        {"binding": "Slow", "payload": {"steps": 4}, "timeout_ms": 0, "guarantee": "at-most-once"}
    )
    job = workers.wait_job(job_id, frozenset({"STALLED", "COMPLETED", "FAILED"}), timeout_s=30)
    assert job["state"] == "STALLED", job
    assert job["retryable"] is True
    # A late report from the still-running performer is ignored (J-115): the job stays STALLED.
    assert workers.wait_job(job_id, frozenset({"STALLED"}))["updated_at"] == job["updated_at"]


@pytest.fixture
def hello_policy(workers: Workers) -> Iterator[str]:
    yield "/api/bindings/Hello/policy"
    workers.api("POST", "/api/bindings/Hello/policy/reset", {})


def test_pause_holds_jobs_back_resume_runs_them_and_reset_returns_to_static(
    workers: Workers, hello_policy: str
) -> None:
    paused = workers.api("POST", hello_policy, {"paused": True})
    assert paused.status == 200 and paused.body["ok"] is True and paused.body["shards"] == 1
    assert paused.body["settings"]["policy"]["paused"] is True
    job_id = workers.enqueue("Hello", {"name": "held"})
    held = workers.wait_job(job_id, frozenset({"SCHEDULED"}))
    assert held["dispatched_at"] is None
    diagnostics = workers.api("GET", "/api/diagnostics").body["bindings"]["Hello"]
    assert diagnostics["blocked"]["paused"] is True and diagnostics["active"] >= 1  # J-149b, J-185

    configured = workers.api(
        "POST", hello_policy, {"paused": False, "concurrency": 3, "rate": {"tokens": 5, "intervalMs": 1000}}
    )
    assert configured.status == 200, configured
    policy = configured.body["settings"]["policy"]
    assert policy["paused"] is False and policy["concurrency"] == 3
    assert policy["rate"] == {"tokens": 5, "intervalMs": 1000}
    assert workers.wait_job(job_id)["state"] == "COMPLETED"

    reset = workers.api("POST", hello_policy + "/reset", {})
    assert reset.status == 200 and reset.body["ok"] is True, reset
    static = reset.body["settings"]["policy"]
    assert static["paused"] is False and static["concurrency"] == 100 and static["rate"] is None  # J-146
    assert workers.api("GET", "/api/diagnostics").body["bindings"]["Hello"]["blocked"]["paused"] is False


def test_diagnostics_answer_for_every_binding_from_shard_zero(workers: Workers) -> None:
    answer = workers.api("GET", "/api/diagnostics")
    assert answer.status == 200 and answer.body["shard"] == 0
    bindings = answer.body["bindings"]
    assert list(bindings) == ["Hello", "Boom", "Slow", "ListNames", "Greet", "Report", "Tally", "Shout"]
    for entry in bindings.values():
        assert set(entry) == {"active", "outbox", "blocked"}
        assert {"capacity", "tokens", "perKey"} <= set(entry["blocked"])
