"""Debounce and throttle at enqueue, and a bulk action over a filter, as the real Worker serves them.

The keys live in the shard Durable Object's SQLite (ADR-0149, ADR-0150); the bulk action's progress lives
in D1 and advances as it is polled (ADR-0151).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from tests.workerd.harness import Workers, quoted

pytestmark = pytest.mark.workerd

HOUR_MS = 3_600_000  # far enough that no job of these tests runs while they look at it
WAIT_S = 60.0  # the Worker answers within seconds; the margin is for a loaded machine
SCHEDULED = frozenset({"SCHEDULED"})


def _post_job(workers: Workers, body: dict[str, Any]) -> Any:
    return workers.api("POST", "/api/jobs", {"binding": "Hello", **body})


def test_a_second_enqueue_debounces_into_the_first_job(workers: Workers) -> None:
    key = f"debounce-{uuid.uuid4().hex}"
    first = _post_job(workers, {"payload": {"name": "first"}, "debounceKey": key, "debounceMs": HOUR_MS})
    assert first.status == 201, first
    job_id = first.body["id"]
    second = _post_job(workers, {"payload": {"name": "last"}, "debounceKey": key, "debounceMs": HOUR_MS})
    assert second.status == 200, second
    assert (second.body["id"], second.body["debounced"]) == (job_id, True)
    job = workers.wait_job(job_id, SCHEDULED, timeout_s=WAIT_S, payload='{"name":"last"}')
    assert job["run_after"] >= job["created_at"] + HOUR_MS


def test_a_throttle_drops_what_exceeds_its_tokens(workers: Workers) -> None:
    rule = {"tokens": 1, "intervalMs": HOUR_MS, "onExcess": "drop"}
    key = f"tenant-{uuid.uuid4().hex}"
    first = _post_job(workers, {"payload": {"name": "kept"}, "throttleKey": key, "throttle": rule})
    assert first.status == 201, first
    second = _post_job(workers, {"payload": {"name": "dropped"}, "throttleKey": key, "throttle": rule})
    assert second.status == 200, second
    assert (second.body["id"], second.body["dropped"]) == (None, True)
    other = _post_job(workers, {"payload": {"name": "other"}, "throttleKey": key + "-b", "throttle": rule})
    assert other.status == 201, other


def test_a_bulk_cancel_acts_on_every_job_its_filter_matches(workers: Workers) -> None:
    key = f"bulk-{uuid.uuid4().hex}"
    ids = [workers.enqueue("Hello", {"name": f"b{n}"}, delayMs=HOUR_MS, concurrencyKey=key) for n in range(3)]
    for job_id in ids:  # the action reads the read model, which shows a new job after its projection
        workers.wait_job(job_id, SCHEDULED, timeout_s=WAIT_S)
    selection = {"action": "cancel", "filter": {"concurrency_key": key}}
    dry = workers.api("POST", "/api/bulk", {**selection, "dryRun": True})
    assert (dry.status, dry.body) == (200, {"matched": 3})
    started = workers.api("POST", "/api/bulk", selection)
    assert started.status == 202, started
    bulk_id = started.body["id"]
    deadline = time.monotonic() + WAIT_S
    progress = started.body
    while progress["state"] != "done" and time.monotonic() < deadline:
        time.sleep(0.25)  # real time: each poll runs a batch on the Worker (noqa: sleep-ok)
        answer = workers.api("GET", f"/api/bulk/{quoted(bulk_id)}")
        assert answer.status == 200, answer
        progress = answer.body
    assert (progress["state"], progress["matched"], progress["done"], progress["failed"]) == ("done", 3, 3, 0)
    for job_id in ids:
        workers.wait_job(job_id, frozenset({"CANCELLED"}), timeout_s=WAIT_S)
