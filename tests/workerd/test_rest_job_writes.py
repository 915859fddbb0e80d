"""Creating a job and the single mutations, as the real Worker serves them (A-3, A-38..A-47, J-132, J-135).

Bodies that no endpoint can parse (A-3) are refused here for every endpoint that reads one.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from tests.workerd.harness import Workers
from tests.workerd.rest_seed import HOUR_MS, TAG, Seeded
from tests.workerd.rest_wire import NOT_ALLOWED, SLACK_MS, assert_json, call, job_path, now_ms, send

pytestmark = pytest.mark.workerd

JOB_GONE: Final = {
    "ok": False,
    "error": "job is no longer available: removed from the coordinator after the retention period",
}
RUN_GONE: Final = {
    "ok": False,
    "error": "run is no longer available: removed from the coordinator after the retention period",
}


# ------------------------------------------------------------------------------------- create

CREATE_REFUSALS: Final = [
    (b'"text"', "body must be an object"),
    (b"[]", "binding is required"),  # [Q] an array passes step 1
    (b'{"binding":"","payload":1}', "binding is required"),
    (b'{"binding":"Nope","maxAttempts":"x"}', "unknown binding: Nope"),  # step 3 before 4 and 5
    (b'{"binding":"Hello","maxAttempts":"x"}', "payload is required"),
    (b'{"binding":"Hello","payload":1,"maxAttempts":null}', "maxAttempts must be a number"),
    (b'{"binding":"Hello","payload":1,"maxAttempts":0,"delayMs":"1"}', "delayMs must be a number"),
    (b'{"binding":"Hello","payload":1,"delayMs":-1,"priority":true}', "priority must be a number"),
    (b'{"binding":"Hello","payload":1,"maxAttempts":0.5,"delayMs":-1}', "maxAttempts must be at least 1"),
    (b'{"binding":"Hello","payload":1,"delayMs":-0.5,"uniqueKey":1}', "delayMs must not be negative"),
    (b'{"binding":"Hello","payload":1,"uniqueKey":null}', "uniqueKey must be a string"),
]


@pytest.mark.parametrize(("raw", "message"), CREATE_REFUSALS)
def test_create_job_refusals_in_order(workers: Workers, raw: bytes, message: str) -> None:
    # first failure wins, in the spec's order and words.
    assert_json(send(workers, "POST", "/api/jobs", raw), 400, {"error": message})


BAD_JSON: Final = [
    ("/api/jobs", b""), ("/api/jobs", b"NaN"),
    ("/api/jobs", b'{"binding":"Hello","payload":1}x'), ("/api/jobs/Hello%230%3Aa/reschedule", b"{"),
    ("/api/jobs/bulk-retry", b""), ("/api/jobs/bulk-cancel", b"[1,"), ("/api/runs", b""),
]  # fmt: skip


@pytest.mark.parametrize(("path", "raw"), BAD_JSON)
def test_unparsable_bodies(workers: Workers, path: str, raw: bytes) -> None:
    # every endpoint that reads a body refuses an empty or unparsable one the same way.
    assert_json(send(workers, "POST", path, raw), 400, {"error": "body must be valid JSON"})


def test_create_reads_json_whatever_the_content_type(workers: Workers, seeded: Seeded) -> None:
    # no content-type check; A-39: unknown fields ignored, empty keys dropped; A-40: 201 {"id"}, and a
    # live unique key answers the existing job.
    unique = f"rest-{TAG}-ctype"
    body = {"binding": "Hello", "payload": None, "delayMs": HOUR_MS, "uniqueKey": unique,
            "concurrencyKey": "", "guarantee": "at-most-once", "timeoutMs": 1, "runAt": 5,
            "partitionKey": "p"}  # fmt: skip
    raw = b" \n" + json.dumps(body).encode() + b"\t"
    ids: set[str] = set()
    for content_type in (None, "text/plain", "application/x-www-form-urlencoded"):
        headers = {"content-type": content_type} if content_type else {}
        created = assert_json(send(workers, "POST", "/api/jobs", raw, headers=headers), 201)
        assert set(created) == {"id"} and created["id"].startswith("Hello#0:")
        ids.add(created["id"])
    (job_id,) = ids
    seeded.delayed.append(job_id)
    job = workers.wait_job(job_id, frozenset({"SCHEDULED"}))
    assert (job["payload"], job["unique_key"], job["concurrency_key"]) == ("null", unique, None)
    assert job["guarantee"] == "at-least-once" and job["run_after"] == job["created_at"] + HOUR_MS


# ------------------------------------------------------------------------- single mutations (A-42..A-47)

RESCHEDULE_REFUSALS: Final = [
    (b"null", "body must be an object"),
    (b"[]", "runAt or delayMs is required"),
    (b"{}", "runAt or delayMs is required"),
    (b'{"runAt":null}', "runAt must be a number"),
    (b'{"runAt":1,"delayMs":"5"}', "delayMs must be a number"),  # types before exclusivity
    (b'{"delayMs":1,"priority":"high"}', "priority must be a number"),
    (b'{"runAt":1,"delayMs":-1}', "runAt and delayMs are mutually exclusive"),
    (b'{"delayMs":-1}', "delayMs must not be negative"),
]


@pytest.mark.parametrize(("raw", "message"), RESCHEDULE_REFUSALS)
def test_reschedule_checks_its_body_before_the_id(workers: Workers, raw: bytes, message: str) -> None:
    # first failure wins; the (malformed) id is only looked at afterwards.
    assert_json(send(workers, "POST", "/api/jobs/not-an-id/reschedule", raw), 400, {"error": message})


@pytest.mark.parametrize(
    "job_id", ["Hello%230", "Hello%23x%3Aa", "1Hello%230%3Aa", "Hello%230%3Aa%3Ab", "%230%3Aa"],
)  # fmt: skip
def test_malformed_job_ids(workers: Workers, job_id: str) -> None:
    # 400 for each single mutation.
    for action in ("retry", "cancel", "reschedule"):
        answer = call(workers, "POST", f"/api/jobs/{job_id}/{action}", {"delayMs": 0})
        assert_json(answer, 400, {"error": "invalid job id"})


@pytest.mark.parametrize(
    ("path", "raw", "expected"),
    [
        ("/api/jobs/Hello%230%3Anope/retry", b"{not json", JOB_GONE),  # retry/cancel read no body
        ("/api/jobs/Hello%230%3Anope/cancel", None, JOB_GONE),
        ("/api/jobs/Hello%230%3Anope/reschedule", b'{"delayMs":0}', JOB_GONE),
        ("/api/jobs/Nobody%237%3Aabc/cancel", None, JOB_GONE),  # a coordinator that never held a job
        ("/api/runs/GREETINGS%3Anope/retry", b"{not json", RUN_GONE),
        ("/api/runs/Unregistered%3Ax/cancel", None, RUN_GONE),  # the flow name is not checked
    ],
)
def test_unknown_well_formed_ids_are_gone(
    workers: Workers, path: str, raw: bytes | None, expected: Any
) -> None:
    # 410, never 404, for an id that parses.
    assert_json(send(workers, "POST", path, raw), 410, expected)


def test_cancel_a_waiting_job_then_it_refuses_everything(workers: Workers, seeded: Seeded) -> None:
    # SCHEDULED -> CANCELLED; A-43: a terminal job answers 409 to all three mutations.
    job_id = seeded.singles["cancel"]
    assert_json(call(workers, "POST", job_path(job_id, "cancel")), 200, {"ok": True})
    workers.wait_job(job_id, frozenset({"CANCELLED"}))
    for action in ("cancel", "retry", "reschedule"):
        assert_json(call(workers, "POST", job_path(job_id, action), {"delayMs": 0}), 409, NOT_ALLOWED)


def test_a_completed_job_refuses_every_mutation(workers: Workers, seeded: Seeded) -> None:
    workers.wait_job(seeded.done, frozenset({"COMPLETED"}))
    for action in ("retry", "cancel", "reschedule"):
        assert_json(call(workers, "POST", job_path(seeded.done, action), {"runAt": 1}), 409, NOT_ALLOWED)


def test_retry_of_a_failed_job_gives_one_more_attempt(workers: Workers, seeded: Seeded) -> None:
    # A-44, J-132: FAILED -> SCHEDULED, attempts kept, so Boom fails again after exactly one more attempt.
    job_id = seeded.failed[0]
    workers.wait_job(job_id, frozenset({"FAILED"}))
    assert_json(call(workers, "POST", job_path(job_id, "retry")), 200, {"ok": True})
    job = workers.wait_job(job_id, frozenset({"FAILED"}), attempts=2)
    assert [entry["attempt"] for entry in job["attempts_log"]] == [2, 1]  # newest first


def test_reschedule_later_keeps_the_id_and_the_unique_key(workers: Workers, seeded: Seeded) -> None:
    # new time = request time + delayMs, priority in the same step; A-47: the reservation stays.
    job_id = seeded.singles["later"]
    before = now_ms()
    answer = call(workers, "POST", job_path(job_id, "reschedule"), {"delayMs": 2 * HOUR_MS, "priority": 9})
    after = now_ms()
    assert_json(answer, 200, {"ok": True})
    job = workers.wait_job(job_id, frozenset({"SCHEDULED"}), priority=9)
    assert before + 2 * HOUR_MS - SLACK_MS <= job["run_after"] <= after + 2 * HOUR_MS + SLACK_MS
    again = {"binding": "Hello", "payload": {}, "uniqueKey": f"rest-{TAG}-later"}
    assert_json(call(workers, "POST", "/api/jobs", again), 201, {"id": job_id})


def test_reschedule_into_the_past_runs_the_job_now(workers: Workers, seeded: Seeded) -> None:
    # runAt may lie in the past; A-47: the alarm is re-armed, so the job runs an hour early.
    job_id = seeded.singles["past"]
    assert_json(call(workers, "POST", job_path(job_id, "reschedule"), {"runAt": 1_000}), 200, {"ok": True})
    job = workers.wait_job(job_id, frozenset({"COMPLETED"}))
    assert job["run_after"] == 1_000


def test_reschedule_to_the_epoch_is_accepted(workers: Workers, seeded: Seeded) -> None:
    # A-46; found in workerd: setAlarm() refuses times <= 0, so the adapter arms 1 ms instead.
    answer = call(workers, "POST", job_path(seeded.singles["epoch"], "reschedule"), {"runAt": 0})
    assert_json(answer, 200, {"ok": True})


def test_cancel_of_a_running_job_is_a_request(workers: Workers) -> None:
    # J-135 / seed page: 200 {"ok":true,"requested":true}; a reschedule while the request is pending (or
    # once the job is CANCELLED) answers 409.
    job_id = workers.enqueue("Slow", {"steps": 20})
    workers.wait_job(job_id, frozenset({"QUEUED", "RUNNING"}))
    assert_json(call(workers, "POST", job_path(job_id, "cancel")), 200, {"ok": True, "requested": True})
    assert_json(call(workers, "POST", job_path(job_id, "reschedule"), {"delayMs": 0}), 409, NOT_ALLOWED)
    assert workers.wait_job(job_id, frozenset({"CANCELLED", "COMPLETED", "FAILED"}))["state"] == "CANCELLED"
