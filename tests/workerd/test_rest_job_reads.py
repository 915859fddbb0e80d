"""Job lists and job reads as the real Worker serves them (A-9, A-27..A-37).

The list tables run over the six delayed jobs of one made-up concurrency key (rest_seed.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

import pytest
from tests.workerd.harness import Workers, quoted
from tests.workerd.rest_seed import HOUR_MS, LIST_UNIQUE_AT, TAG, ListGroup, Seeded
from tests.workerd.rest_wire import NOT_ALLOWED, assert_json, call, job_path, listed

pytestmark = pytest.mark.workerd

NOT_FOUND: Final = {"error": "not found"}


# ----------------------------------------------------------------------------------------- list/read

Expect = Callable[[ListGroup], tuple[list[str], int]]
LIST_CASES: Final[list[tuple[str, Expect]]] = [
    ("", lambda g: g.expect()),
    ("&sort=priority&order=asc", lambda g: g.expect("priority", ascending=True)),
    ("&sort=priority", lambda g: g.expect("priority")),
    ("&sort=priority&order=ASC", lambda g: g.expect("priority")),  # only the exact "asc" ascends
    ("&sort=binding&order=asc", lambda g: g.expect("binding", ascending=True)),
    ("&sort=created_at&order=asc", lambda g: g.expect("created_at", ascending=True)),
    ("&sort=payload&order=asc", lambda g: g.expect("updated_at", ascending=True)),  # not in the allow-list
    ("&sort=created_at%3BDROP%20TABLE%20job", lambda g: g.expect()),
    ("&limit=2&offset=1", lambda g: g.expect(page=slice(1, 3))),
    ("&limit=2.7", lambda g: g.expect(page=slice(0, 2))),  # A-29 port: floored
    ("&limit=1&offset=-3", lambda g: g.expect(page=slice(0, 1))),
    ("&binding=Greet", lambda g: g.expect(where=lambda i, r: r["binding"] == "Greet")),
    ("&state=scheduled", lambda g: g.expect(where=lambda i, r: False)),  # exact, case-sensitive
    ("&unique_key={unique}", lambda g: g.expect(where=lambda i, r: i == LIST_UNIQUE_AT)),
    ("&id={first}", lambda g: g.expect(where=lambda i, r: i == 0)),
    ("&id={prefix}", lambda g: g.expect(where=lambda i, r: False)),
    ("&state=&binding=&id=&unique_key=", lambda g: g.expect()),  # empty = no filter
    ("&created_from={low}&created_to={low}", lambda g: g.expect(where=lambda i, r: r["created_at"] == g.low)),
    ("&created_from=%20{second}%20", lambda g: g.expect(where=lambda i, r: r["created_at"] >= g.second)),
    ("&created_to={high_exp}", lambda g: g.expect()),
    ("&created_to={low_hex}", lambda g: g.expect(where=lambda i, r: r["created_at"] <= g.low)),
    ("&created_from=0&created_to=0", lambda g: g.expect(where=lambda i, r: False)),  # 0 is a real bound
]  # fmt: skip


@pytest.mark.parametrize(("query", "expect"), LIST_CASES)
def test_list_filters_sorts_and_pages(
    workers: Workers, seeded: Seeded, list_group: ListGroup, query: str, expect: Expect
) -> None:
    # A-28..A-31, over the six jobs of one made-up concurrency key.
    values = list_group.values(seeded.list_key, seeded.list_unique)
    body = listed(workers, f"concurrency_key={seeded.list_key}" + query.format(**values))
    ids, total = expect(list_group)
    assert ([row["id"] for row in body["jobs"]], body["total"]) == (ids, total)


@pytest.mark.parametrize(("query", "cap"), [("limit=1000", 100), ("limit=-5", 20), ("limit=abc", 20)])
def test_list_limits_without_a_filter(workers: Workers, seeded: Seeded, query: str, cap: int) -> None:
    # a default of 20 (missing, 0, non-numeric; the port's choice below 1), capped at 100.
    body = listed(workers, query)
    assert len(body["jobs"]) == min(body["total"], cap)


SUMMARY_KEYS: Final = {"id", "binding", "state", "priority", "attempts", "max_attempts", "created_at",
                       "updated_at", "dispatched_at", "retryable"}  # fmt: skip
DETAIL_KEYS: Final = SUMMARY_KEYS | {"concurrency_key", "unique_key", "guarantee", "run_after", "progress",
                                     "payload", "result", "attempts_log"}  # fmt: skip


def test_a_waiting_job_as_summary_and_detail(workers: Workers, seeded: Seeded, list_group: ListGroup) -> None:
    # exact key sets; A-11 payload as a JSON string; J-26 run_after = created + delay.
    summary = list_group.rows[LIST_UNIQUE_AT]
    assert set(summary) == SUMMARY_KEYS
    detail = assert_json(call(workers, "GET", job_path(summary["id"])), 200)["job"]
    assert set(detail) == DETAIL_KEYS
    assert {k: detail[k] for k in SUMMARY_KEYS} == summary
    assert detail | {"id": None, "created_at": 0, "updated_at": 0, "run_after": 0} == {
        "id": None, "binding": "Hello", "state": "SCHEDULED", "priority": 1, "attempts": 0, "max_attempts": 3,
        "created_at": 0, "updated_at": 0, "dispatched_at": None, "retryable": False,
        "concurrency_key": seeded.list_key, "unique_key": seeded.list_unique, "guarantee": "at-least-once",
        "run_after": 0, "progress": None, "payload": json.dumps({"tag": TAG}, separators=(",", ":")),
        "result": None, "attempts_log": [],
    }  # fmt: skip
    assert detail["run_after"] == detail["created_at"] + HOUR_MS


def test_finished_jobs_in_detail(workers: Workers, seeded: Seeded) -> None:
    # one attempt entry; stored entries may carry job_id (kept for compatibility), and the
    # synthesised entry of a completed job is exactly the five fields; A-33 retryable for FAILED.
    done = workers.wait_job(seeded.done)
    greeted = json.dumps({"greeted": TAG}, separators=(",", ":"))
    assert (done["state"], done["result"], done["retryable"]) == ("COMPLETED", greeted, False)
    (entry,) = done["attempts_log"]
    assert entry.pop("job_id", done["id"]) == done["id"]
    assert entry == {"attempt": 1, "state": "COMPLETED", "started_at": done["dispatched_at"],
                     "finished_at": done["updated_at"], "error": None}  # fmt: skip
    failed = workers.wait_job(seeded.failed[0])
    assert [failed[k] for k in ("state", "attempts", "result", "retryable")] == ["FAILED", 1, None, True]
    (attempt,) = failed["attempts_log"]
    assert attempt.pop("job_id", failed["id"]) == failed["id"]
    assert [attempt[k] for k in ("attempt", "state", "finished_at")] == [1, "FAILED", failed["updated_at"]]
    assert "intentional failure" in attempt["error"] and len(attempt["error"]) <= 2_000


def test_percent_encoded_ids(workers: Workers, seeded: Seeded) -> None:
    # path parameters are percent-decoded; ":" may be raw or encoded, in any hex case.
    job_id = seeded.done
    workers.wait_job(job_id)
    for encoded in (
        quoted(job_id),
        job_id.replace("#", "%23"),
        quoted(job_id).replace("%3A", "%3a"),
        "".join(f"%{byte:02X}" for byte in job_id.encode()),
    ):
        assert assert_json(call(workers, "GET", f"/api/jobs/{encoded}"), 200)["job"]["id"] == job_id, encoded
    # The coordinator found the job (409, not 410): the raw ":" form reaches the mutations too.
    assert_json(call(workers, "POST", f"/api/jobs/{job_id.replace('#', '%23')}/retry"), 409, NOT_ALLOWED)


@pytest.mark.parametrize(
    "path",
    ["/api/jobs/not-a-job-id", "/api/jobs/Hello%230%3Anope", "/api/jobs/bulk-retry",
     "/api/jobs/Hello%230%3Aa%2Fretry", "/api/runs/GREETINGS%3Anope", "/api/runs/nope"],
)  # fmt: skip
def test_reads_of_what_does_not_exist(workers: Workers, path: str) -> None:
    # no id validation on reads; A-27: GET of a bulk path is a lookup; A-60: runs likewise.
    assert_json(call(workers, "GET", path), 404, NOT_FOUND)
