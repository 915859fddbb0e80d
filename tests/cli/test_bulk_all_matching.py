"""``tsumugi jobs cancel|retry --all-matching`` against a real ``tsumugi dev`` (ADR-0151)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from tests.cli.conftest import Tsumugi
from tests.dev_child import wait_for

DEADLINE_S = 30.0
HOUR_MS = "3600000"
JOBS = 230  # more than the 200 of one batch


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _listed(operator: Tsumugi, key: str, count: int) -> None:
    def all_listed() -> bool | None:
        answer: dict[str, Any] = json.loads(operator("jobs", "list", "--concurrency-key", key, "--json").out)
        return True if answer["total"] == count else None

    wait_for(all_listed, DEADLINE_S, f"{count} jobs with key {key} in the read model")


def _states(operator: Tsumugi, key: str) -> dict[str, int]:
    answer = json.loads(operator("jobs", "list", "--concurrency-key", key, "--limit", "100", "--json").out)
    counts: dict[str, int] = {}
    for job in answer["jobs"]:
        counts[job["state"]] = counts.get(job["state"], 0) + 1
    return counts


def test_cancel_all_matching_counts_asks_and_shows_progress(
    operator: Tsumugi, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(JOBS):
        outcome = operator("enqueue", "Ok", "{}", "--delay-ms", HOUR_MS, "--concurrency-key", "every")
        assert outcome.code == 0, outcome.err
    _listed(operator, "every", JOBS)
    counted = operator("jobs", "cancel", "--all-matching", "--concurrency-key", "every", "--dry-run")
    assert (counted.code, counted.out) == (0, f"{JOBS} jobs match\n")
    refused = operator("jobs", "cancel", "--all-matching", "--concurrency-key", "every")
    assert refused.code == 1 and f"{JOBS} jobs match: add --yes" in refused.err  # not a terminal: no prompt
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    outcome = operator("jobs", "cancel", "--all-matching", "--concurrency-key", "every", "--yes")
    assert (outcome.code, outcome.out) == (0, f"cancel: {JOBS} of {JOBS} jobs, 0 refused\n")
    assert terminal.getvalue().endswith(f"] {JOBS}/{JOBS}\n")

    def all_cancelled() -> bool | None:
        return True if _states(operator, "every") == {"CANCELLED": 100} else None

    wait_for(all_cancelled, DEADLINE_S, "the listed jobs cancelled")


def test_a_cap_stops_the_action(operator: Tsumugi) -> None:
    for _ in range(5):
        operator("enqueue", "Ok", "{}", "--delay-ms", HOUR_MS, "--concurrency-key", "capped")
    _listed(operator, "capped", 5)
    outcome = operator(
        "jobs", "cancel", "--all-matching", "--concurrency-key", "capped", "--cap", "2", "--yes", "--json"
    )
    assert outcome.code == 0, outcome.err
    answer = json.loads(outcome.out)
    assert (answer["state"], answer["matched"], answer["done"]) == ("done", 2, 2)


def test_reschedule_all_matching_moves_every_scheduled_job(operator: Tsumugi) -> None:
    # issue 16: reschedule over a whole filter, from the CLI
    for _ in range(3):
        operator("enqueue", "Ok", "{}", "--delay-ms", HOUR_MS, "--concurrency-key", "moved")
    _listed(operator, "moved", 3)
    counted = operator(
        "jobs", "reschedule", "--all-matching", "--concurrency-key", "moved", "--delay-ms", "0", "--dry-run"
    )
    assert (counted.code, counted.out) == (0, "3 jobs match\n"), counted.err
    outcome = operator(
        "jobs", "reschedule", "--all-matching", "--concurrency-key", "moved", "--delay-ms", "0",
        "--priority", "7", "--yes",
    )  # fmt: skip
    assert (outcome.code, outcome.out) == (0, "reschedule: 3 of 3 jobs, 0 refused\n"), outcome.err

    def all_completed() -> bool | None:
        return True if _states(operator, "moved") == {"COMPLETED": 3} else None

    wait_for(all_completed, DEADLINE_S, "the rescheduled jobs run now, not in an hour")


def test_reschedule_takes_an_id_or_all_matching_with_a_filter(operator: Tsumugi) -> None:
    both = operator("jobs", "reschedule", "some-id", "--all-matching", "--binding", "Ok", "--delay-ms", "0")
    assert (both.code, both.err) == (1, "tsumugi: --all-matching takes a filter, not a job id\n")
    filtered = operator("jobs", "reschedule", "--binding", "Ok", "--delay-ms", "0")
    assert (filtered.code, filtered.err) == (
        1,
        "tsumugi: a filter needs --all-matching; otherwise give one id\n",
    )
    neither = operator("jobs", "reschedule", "--delay-ms", "0")
    assert (neither.code, neither.err) == (1, "tsumugi: name the job, or give --all-matching and a filter\n")
