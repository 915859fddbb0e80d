"""Bulk retry and bulk cancel, by ids and by filter, as the real Worker serves them (A-48..A-53)."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from tests.workerd.harness import Workers
from tests.workerd.rest_seed import Seeded
from tests.workerd.rest_wire import assert_json, call, listed, send

pytestmark = pytest.mark.workerd


# ---------------------------------------------------------------------------------- bulk (A-48..A-53)

BULK_REFUSALS: Final = [
    ("bulk-retry", b"null", "body must be an object"),
    ("bulk-retry", b'{"ids":null}', "ids must be an array"),
    ("bulk-retry", b'{"ids":[]}', "ids must not be empty"),
    ("bulk-cancel", json.dumps({"ids": [f"Hello#0:j{i}" for i in range(201)]}).encode(),
     "ids must not exceed 200 entries"),
    ("bulk-retry", b'{"ids":["Hello#0:a",""]}', "ids must be non-empty strings"),
    ("bulk-cancel", b'{"state":null}', "state must be a string"),
    ("bulk-retry", b'{"unique_key":1,"concurrency_key":1}', "unique_key must be a string"),
    ("bulk-retry", b'{"state":""}', "state must be one of FAILED, STALLED for retry"),
    ("bulk-cancel", b'{"state":"FAILED"}', "state must be one of SCHEDULED for cancel"),
    ("bulk-retry", b'{"created_from":"1","limit":0}', "created_from must be a number"),
    ("bulk-cancel", b'{"limit":0.5}', "limit must be at least 1"),
]  # fmt: skip


@pytest.mark.parametrize(("action", "raw", "message"), BULK_REFUSALS)
def test_bulk_refusals_in_order(workers: Workers, action: str, raw: bytes, message: str) -> None:
    # ids mode when `ids` is present (null included), else filter mode; first failure wins.
    assert_json(send(workers, "POST", f"/api/jobs/{action}", raw), 400, {"error": message})


def test_bulk_cancel_by_ids_groups_by_coordinator(workers: Workers, seeded: Seeded) -> None:
    # one batch per coordinator in order of first appearance; refusals per group, then invalid
    # ids; a duplicate is refused the second time; other fields are ignored in ids mode.
    (zero_a, zero_b), (one,) = seeded.tally["Tally#0"], seeded.tally["Tally#1"]
    hello = seeded.singles["bulk"]
    ids = [zero_a, hello, one, zero_b, hello, "Tally#1:nope", "junk"]
    answer = call(workers, "POST", "/api/jobs/bulk-cancel", {"ids": ids, "state": 9, "limit": "x"})
    assert_json(answer, 200, {
        "ok": [zero_a, zero_b, hello, one],
        "failed": [{"id": hello, "reason": "invalid-state"}, {"id": "Tally#1:nope", "reason": "gone"},
                   {"id": "junk", "reason": "invalid-id"}],
        "remaining": 0,
    })  # fmt: skip
    for job_id in (zero_a, one):
        workers.wait_job(job_id, frozenset({"CANCELLED"}))


def test_bulk_retry_by_ids(workers: Workers, seeded: Seeded) -> None:
    first, second = seeded.failed[1:]
    for job_id in (first, second, seeded.done):
        workers.wait_job(job_id, frozenset({"FAILED", "COMPLETED"}))
    ids = [first, seeded.done, second, "Boom#0:nope", "junk"]
    assert_json(call(workers, "POST", "/api/jobs/bulk-retry", {"ids": ids}), 200, {
        "ok": [first, second],
        "failed": [{"id": "Boom#0:nope", "reason": "gone"}, {"id": seeded.done, "reason": "invalid-state"},
                   {"id": "junk", "reason": "invalid-id"}],
        "remaining": 0,
    })  # fmt: skip


def _oldest_first(workers: Workers, query: str) -> list[str]:
    """A-50: the filter mode's selection order, created_at then id, both ascending."""
    rows = listed(workers, f"{query}&limit=100")["jobs"]
    return [r["id"] for r in sorted(rows, key=lambda r: (r["created_at"], r["id"]))]


def test_bulk_retry_by_filter_takes_the_oldest_first(workers: Workers, seeded: Seeded) -> None:
    # filters combine, limit clips the selection; A-51: remaining = matches - selected.
    for job_id in seeded.bulk_retry_ids:
        workers.wait_job(job_id, frozenset({"FAILED"}), timeout_s=90)  # one at a time (per-key limit)
    oldest = _oldest_first(workers, f"concurrency_key={seeded.bulk_retry_key}")
    body = {"concurrency_key": seeded.bulk_retry_key, "binding": "Boom", "state": "FAILED", "limit": 2}
    answer = call(workers, "POST", "/api/jobs/bulk-retry", body)
    assert_json(answer, 200, {"ok": oldest[:2], "failed": [], "remaining": 1})


def test_bulk_cancel_by_filter(workers: Workers, seeded: Seeded) -> None:
    # a fractional limit is floored (port); empty-string filters are ignored; created bounds inclusive.
    for job_id in seeded.bulk_cancel_ids:
        workers.wait_job(job_id, frozenset({"SCHEDULED"}))
    oldest = _oldest_first(workers, f"concurrency_key={seeded.bulk_cancel_key}")
    body: dict[str, Any] = {"concurrency_key": seeded.bulk_cancel_key, "limit": 1.9}
    answer = call(workers, "POST", "/api/jobs/bulk-cancel", body)
    assert_json(answer, 200, {"ok": oldest[:1], "failed": [], "remaining": 2})
    last = seeded.bulk_cancel_ids[2]
    created = workers.wait_job(last, frozenset({"SCHEDULED"}))["created_at"]
    body = {"unique_key": seeded.bulk_cancel_unique, "binding": "", "created_from": created,
            "created_to": created, "state": "SCHEDULED"}  # fmt: skip
    answer = call(workers, "POST", "/api/jobs/bulk-cancel", body)
    assert_json(answer, 200, {"ok": [last], "failed": [], "remaining": 0})
