"""The read-only operations of the real Worker: stats, names, diagnostics, schedules, metrics, OpenAPI.

A-54..A-58, A-69..A-71, S-21; A-24: TSUMUGI_METRICS is not bound here, so /api/metrics answers 501.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any, Final

import pytest
from tests.workerd.harness import TOKEN, Workers
from tests.workerd.rest_seed import LIST_JOBS, ListGroup, Seeded
from tests.workerd.rest_wire import SLACK_MS, assert_json, call, now_ms, send

pytestmark = pytest.mark.workerd


# ------------------------------------------------------------------------- operations (A-54..A-58, A-69)

# src/app.py's performers in registration order (A-55 keeps it; A-56 sorts it).
REGISTERED: Final = ("Hello", "Boom", "Slow", "ListNames", "Greet", "Report", "Tally", "Shout")
JOB_STATES: Final = {"SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"}


def test_stats_count_the_read_model(workers: Workers, seeded: Seeded, list_group: ListGroup) -> None:
    # camelCase, only states with rows, age of the oldest SCHEDULED job from its creation.
    before = now_ms()
    stats = assert_json(call(workers, "GET", "/api/stats"), 200)
    assert set(stats) == {"byState", "oldestScheduledMs"}
    assert set(stats["byState"]) <= JOB_STATES
    assert all(isinstance(n, int) and n > 0 for n in stats["byState"].values())
    assert stats["byState"]["SCHEDULED"] >= len(LIST_JOBS)
    assert stats["oldestScheduledMs"] >= before - list_group.low - SLACK_MS


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/bindings", {"bindings": sorted(REGISTERED)}),
        ("/api/flows", {"flows": ["APPROVAL", "GREETINGS", "NAPPING", "PIPELINE", "TIMED"]}),
    ],
)
def test_registered_names_sorted(workers: Workers, path: str, body: Any) -> None:
    # the registered names, ascending, including bindings that never ran.
    assert_json(call(workers, "GET", path), 200, body)


def test_diagnostics_ask_shard_zero_of_every_binding(workers: Workers, list_group: ListGroup) -> None:
    # registration order, live from <binding>#0; the three booleans (the port adds `paused`, J-149b).
    body = assert_json(call(workers, "GET", "/api/diagnostics"), 200)
    assert body["shard"] == 0
    assert list(body["bindings"]) == list(REGISTERED)
    for entry in body["bindings"].values():
        assert isinstance(entry["active"], int) and isinstance(entry["outbox"], int)
        assert {"capacity", "tokens", "perKey"} <= set(entry["blocked"])
        assert all(isinstance(flag, bool) for flag in entry["blocked"].values())
    waiting_hello = sum(1 for row in list_group.rows if row["binding"] == "Hello")
    assert body["bindings"]["Hello"]["active"] >= waiting_hello


SCHEDULE_KEYS: Final = {"name", "kind", "target", "every_ms", "cron", "overlap", "next_run_at", "last_run_at",
                        "last_fired_at", "last_job_id", "last_run_id", "last_skipped_at", "skipped_count",
                        "last_error"}  # fmt: skip


def test_schedules_from_the_scheduler(workers: Workers) -> None:
    # A-58, S-21: exactly these fields, by name; the definitions of src/app.py.
    schedules = assert_json(call(workers, "GET", "/api/schedules"), 200)["schedules"]
    assert all(set(item) == SCHEDULE_KEYS for item in schedules)
    defined = {s["name"]: (s["kind"], s["target"], s["every_ms"], s["cron"], s["overlap"]) for s in schedules}
    assert list(defined) == ["nightly", "ping-hello", "poll-names"]
    assert defined == {
        "nightly": ("flow", "GREETINGS", None, "0 3 * * *", "skip"),
        "ping-hello": ("job", "Hello", 60_000, None, "overlap"),
        "poll-names": ("job", "ListNames", 300_000, None, "skip"),
    }
    nightly = schedules[0]
    assert nightly["next_run_at"] % 86_400_000 == 3 * 3_600_000  # cron in UTC
    assert nightly["last_job_id"] is None and schedules[1]["last_run_id"] is None
    assert all(isinstance(s["skipped_count"], int) for s in schedules)


def test_metrics_without_a_dataset(workers: Workers) -> None:
    # TSUMUGI_METRICS is not bound here -> 501, checked before the query is validated.
    for query in ("", "?hours=24", "?hours=0", "?hours=abc", "?hours=721", "?binding=2fa"):
        answer = call(workers, "GET", f"/api/metrics{query}")
        assert_json(answer, 501, {"error": "metrics is not configured"})


OPERATION_IDS: Final = {
    "listJobs", "createJob", "getJob", "retryJob", "rescheduleJob", "cancelJob", "bulkRetryJobs",
    "bulkCancelJobs", "listBindings", "getMetrics", "getStats", "getDiagnostics", "listSchedules",
    "listRuns", "startRun", "getRun", "retryRun", "cancelRun", "listFlows", "getOpenApi",
    "updateBindingPolicy", "resetBindingPolicy",  # A-26 superseded: J-176's two routes are documented too
    "sendRunEvent", "startBulkAction", "getBulkAction",  # ADR-0148, ADR-0151: routes beyond the original
}  # fmt: skip


def _openapi(workers: Workers) -> dict[str, Any]:
    # The document answers the cookie as well as the header (A-70: both schemes are alternatives).
    cookie = {"cookie": f"tsumugi_token={TOKEN}"}
    answer = send(workers, "GET", "/api/openapi.json", token=None, headers=cookie)
    document: dict[str, Any] = assert_json(answer, 200)
    return document


def test_the_openapi_document(workers: Workers) -> None:
    # A-69..A-71
    document = _openapi(workers)
    assert document["openapi"] == "3.1.0" and document["info"]["title"] == "Tsumugi REST API"
    assert "501" in document["info"]["description"]
    assert document["security"] == [{"bearerAuth": []}, {"cookieAuth": []}]
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert (schemes["cookieAuth"]["type"], schemes["cookieAuth"]["in"]) == ("apiKey", "cookie")
    assert schemes["cookieAuth"]["name"] == "tsumugi_token"
    operations = [op for item in document["paths"].values() for op in item.values() if "operationId" in op]
    assert {op["operationId"] for op in operations} == OPERATION_IDS and len(operations) == len(OPERATION_IDS)
    assert all("503" in op["responses"] for op in operations if op["operationId"] != "getOpenApi")


def test_the_openapi_version_is_the_package_version(workers: Workers) -> None:
    # A-69; found in workerd: the Worker ships tsumugi without dist-info, so the package carries it.
    from tsumugi._version import __version__

    assert _openapi(workers)["info"]["version"] == __version__ == importlib.metadata.version("tsumugi")
