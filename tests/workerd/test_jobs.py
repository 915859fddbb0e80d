"""Jobs through the real Worker: three ways in, the Queue and the Python queue handler, D1 out.

Rules: A-40 (201 with the id), J-12/J-17/J-19 (ids and shards), J-28 (unique keys), J-61/J-62 (remote
performers over a service binding), J-93..J-100 (retries and backoff), J-116..J-119 (the consumer).
"""

from __future__ import annotations

import json

import pytest
from tests.workerd.harness import Workers, request

pytestmark = pytest.mark.workerd


def test_a_job_enqueued_over_rest_completes_and_d1_shows_it(workers: Workers) -> None:
    job_id = workers.enqueue("Greet", {"name": "rest"})
    assert job_id.startswith("Greet#0:")  # J-19: no partition key, shard 0
    job = workers.wait_job(job_id)
    assert job["state"] == "COMPLETED" and job["attempts"] == 1
    assert json.loads(job["result"]) == {"greeted": "rest"}
    assert [entry["state"] for entry in job["attempts_log"]] == ["COMPLETED"]


def test_a_job_enqueued_by_the_example_route_completes(workers: Workers) -> None:
    answer = request(workers.url + "/hello/route", "POST")
    assert answer.status == 201, answer
    job = workers.wait_job(answer.body["id"])
    assert job["binding"] == "Hello" and job["state"] == "COMPLETED"
    assert json.loads(job["payload"]) == {"name": "route"}


def test_the_companion_worker_enqueues_through_create_client(workers: Workers) -> None:
    # J-200: an enqueue-only Worker with just JOB_SHARD, bound to the example's shard class.
    job_id = workers.companion_enqueue({"binding": "Greet", "payload": {"name": "companion"}})
    job = workers.wait_job(job_id)
    assert job["state"] == "COMPLETED" and json.loads(job["result"]) == {"greeted": "companion"}


def test_partition_keys_route_to_both_shards_of_a_binding(workers: Workers) -> None:
    # J-18, J-19: Tally has two shards; FNV-1a of the key picks one, from either Worker.
    by_shard: dict[str, str] = {}
    for key in ("a", "b", "c", "d", "e", "f"):
        payload = {"values": [1, 2, len(key)]}
        job_id = workers.companion_enqueue({"binding": "Tally", "payload": payload, "partition_key": key})
        by_shard.setdefault(job_id.split(":", 1)[0], job_id)
    assert set(by_shard) == {"Tally#0", "Tally#1"}
    for job_id in by_shard.values():
        job = workers.wait_job(job_id)
        assert job["state"] == "COMPLETED" and json.loads(job["result"]) == {"sum": 4}


def test_a_sharded_binding_refuses_an_enqueue_without_a_partition_key(workers: Workers) -> None:
    answer = workers.api("POST", "/api/jobs", {"binding": "Tally", "payload": {}})
    assert answer.status == 400
    assert answer.body == {
        "error": "Tally is split into shards=2 and requires partitionKey, "
        "omitting it drops the per-key guarantees"
    }


def test_enqueue_many_from_the_companion_returns_ids_in_order(workers: Workers) -> None:
    jobs = [{"binding": "Tally", "payload": {"values": [i]}, "partition_key": f"k{i}"} for i in range(8)]
    answer = request(workers.companion_url + "/enqueue-many", "POST", {"jobs": jobs})
    assert answer.status == 201, answer
    ids = answer.body["ids"]
    assert len(ids) == 8
    for index, job_id in enumerate(ids):
        assert json.loads(workers.wait_job(job_id)["result"]) == {"sum": index}


def test_a_unique_key_answers_the_same_job_twice(workers: Workers) -> None:
    # J-28: a second enqueue with the key of a live job returns that job's id.
    first = workers.enqueue("Slow", {"steps": 2}, uniqueKey="workerd-unique")
    second = workers.enqueue("Slow", {"steps": 2}, uniqueKey="workerd-unique")
    assert second == first
    job = workers.wait_job(first)
    assert job["state"] == "COMPLETED" and job["unique_key"] == "workerd-unique"


def test_a_failing_job_is_retried_with_backoff_until_it_fails(workers: Workers) -> None:
    job_id = workers.enqueue("Boom", {}, maxAttempts=2)
    job = workers.wait_job(job_id, frozenset({"FAILED"}), timeout_s=60)
    assert job["attempts"] == 2 and job["max_attempts"] == 2
    first, second = sorted(job["attempts_log"], key=lambda entry: entry["attempt"])
    assert [first["state"], second["state"]] == ["FAILED", "FAILED"]
    assert "intentional failure" in first["error"]
    # J-100: the second attempt waited out the first backoff step (1 s base, jitter never below half).
    assert second["started_at"] - first["finished_at"] >= 500
    assert job["retryable"] is True


def test_a_remote_performer_in_the_companion_runs_over_the_service_binding(workers: Workers) -> None:
    # J-62, J-63: Shout lives in the companion Worker; its heartbeat crosses back to the calling Worker.
    job_id = workers.enqueue("Shout", {"text": "over rpc"})
    job = workers.wait_job(job_id)
    assert job["state"] == "COMPLETED", job
    assert json.loads(job["result"]) == {"shouted": "OVER RPC", "cancelRequested": False}


def test_an_at_most_once_job_is_claimed_and_runs_once(workers: Workers) -> None:
    # J-107: the consumer claims before performing; the job records its guarantee.
    job_id = workers.companion_enqueue(
        {"binding": "Greet", "payload": {"name": "once"}, "guarantee": "at-most-once"}
    )
    job = workers.wait_job(job_id)
    assert job["state"] == "COMPLETED" and job["guarantee"] == "at-most-once"
    assert len(job["attempts_log"]) == 1
