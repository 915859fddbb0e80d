"""What the operator commands print, from REST answers built by hand: tables, fields, JSON, the bar."""

from __future__ import annotations

import json

from tsumugi.api import models
from tsumugi.cli import operator_views, text_output
from tsumugi.cli.bulk_pages import BulkOutcome
from tsumugi.cli.job_changes import bulk_summary

MAY_1_NOON_MS = 1_777_636_800_000  # 2026-05-01 12:00:00 UTC


def _summary(job_id: str, **changes: object) -> models.JobSummary:
    fields: dict[str, object] = {
        "id": job_id,
        "binding": "SendMail",
        "state": "FAILED",
        "priority": 0,
        "attempts": 3,
        "max_attempts": 3,
        "created_at": MAY_1_NOON_MS,
        "updated_at": MAY_1_NOON_MS + 61_000,
        "dispatched_at": MAY_1_NOON_MS + 1_000,
        "retryable": True,
    }
    return models.JobSummary.model_validate({**fields, **changes})


def _detail(**changes: object) -> models.JobDetail:
    fields: dict[str, object] = {
        **_summary("SendMail#0:abc").model_dump(),
        "concurrency_key": None,
        "unique_key": "mail-7",
        "guarantee": "at-least-once",
        "run_after": MAY_1_NOON_MS,
        "progress": 0.25,
        "payload": '{"to":"a@example.com"}',
        "result": None,
        "attempts_log": [
            {"attempt": 2, "state": "FAILED", "started_at": MAY_1_NOON_MS + 2_000,
             "finished_at": MAY_1_NOON_MS + 3_250, "error": "smtp said\nno"},
            {"attempt": 1, "state": "FAILED", "started_at": None, "finished_at": MAY_1_NOON_MS,
             "error": None},
        ],
    }  # fmt: skip
    return models.JobDetail.model_validate({**fields, **changes})


def test_a_job_list_is_an_aligned_table_with_what_was_left_out() -> None:
    answer = models.JobList(jobs=[_summary("SendMail#0:a"), _summary("SendMail#0:bb", priority=10)], total=5)
    assert operator_views.job_list(answer) == (
        "ID             BINDING   STATE   ATTEMPTS  PRIORITY  CREATED (UTC)        UPDATED (UTC)\n"
        "SendMail#0:a   SendMail  FAILED       3/3         0  2026-05-01 12:00:00  2026-05-01 12:01:01\n"
        "SendMail#0:bb  SendMail  FAILED       3/3        10  2026-05-01 12:00:00  2026-05-01 12:01:01\n"
        "2 of 5 jobs shown (--limit, --offset for more)\n"
    )


def test_an_empty_list_says_so() -> None:
    assert operator_views.job_list(models.JobList(jobs=[], total=0)) == "no jobs\n"
    assert operator_views.run_list(models.RunList(runs=[], total=0)) == "no runs\n"


def test_a_job_detail_shows_fields_payload_result_and_attempts() -> None:
    text = operator_views.job_detail(_detail())
    head, payload, result, attempts = text.split("\n\n")
    assert head.splitlines()[:3] == [
        "id:              SendMail#0:abc",
        "binding:         SendMail",
        "state:           FAILED (retryable)",
    ]
    assert "progress:        25%" in head and "unique key:      mail-7" in head
    assert "concurrency key: -" in head
    assert payload == 'payload:\n  {\n    "to": "a@example.com"\n  }'
    assert result == "result:\n  -"
    assert attempts.splitlines() == [
        "ATTEMPT  STATE   STARTED (UTC)        TOOK   ERROR",
        "      2  FAILED  2026-05-01 12:00:02  1.2 s  smtp said no",
        "      1  FAILED  -                    -      -",
    ]


def test_long_cells_are_cut_to_one_terminal_line() -> None:
    text = text_output.table(["ERROR"], [["x" * 200]])
    assert text.splitlines()[1] == "x" * (text_output.CELL_LIMIT - 1) + "…"


def test_durations_read_like_a_person_says_them() -> None:
    assert [text_output.duration(ms) for ms in (None, 850, 12_340, 245_000, 7_620_000)] == [
        "-",
        "850 ms",
        "12.3 s",
        "4 min 05 s",
        "2 h 07 min",
    ]


def test_a_payload_that_is_not_json_is_shown_as_it_is() -> None:
    assert text_output.decoded_json("not json") == "not json"
    assert text_output.decoded_json("[1, 2]") == "[\n  1,\n  2\n]"


def test_json_output_is_the_wire_shape() -> None:
    # camelCase stats keep their wire names in --json
    stats = models.Stats(byState={"FAILED": 2}, oldestScheduledMs=None)
    assert json.loads(text_output.json_text(stats)) == {"byState": {"FAILED": 2}, "oldestScheduledMs": None}
    assert text_output.json_text({"id": "a"}) == '{\n  "id": "a"\n}\n'


def test_stats_list_states_in_lifecycle_order() -> None:
    stats = models.Stats(byState={"FAILED": 2, "COMPLETED": 40, "SCHEDULED": 1}, oldestScheduledMs=90_500)
    assert operator_views.stats(stats) == (
        "STATE      JOBS\n"
        "SCHEDULED     1\n"
        "COMPLETED    40\n"
        "FAILED        2\n"
        "oldest scheduled job: created 1 min 30 s ago\n"
    )
    assert operator_views.stats(models.Stats(byState={}, oldestScheduledMs=None)) == (
        "no jobs\noldest scheduled job: -\n"
    )


def test_a_run_detail_lists_its_nodes() -> None:
    run = {
        "id": "GREETINGS:r1", "flow": "GREETINGS", "state": "FAILED", "node_total": 2, "node_done": 2,
        "node_failed": 1, "created_at": MAY_1_NOON_MS, "updated_at": MAY_1_NOON_MS, "input": '{"prefix":"x"}',
        "parent_run_id": None, "parent_node_id": None, "retryable": True,
    }  # fmt: skip
    node = {
        "id": "list", "binding": "ListNames", "state": "FAILED", "container": False, "parent": None,
        "origin": "static", "after": [], "job_id": "ListNames#0:j", "child_run_id": None, "result": None,
        "error": "boom", "position": 0, "created_at": MAY_1_NOON_MS, "updated_at": MAY_1_NOON_MS,
    }  # fmt: skip
    text = operator_views.run_detail(models.RunDetailResponse.model_validate({"run": run, "nodes": [node]}))
    assert "state:      FAILED (resumable)\n" in text
    assert "nodes:      2 of 2 done, 1 failed\n" in text
    assert text.endswith(
        "NODE  BINDING    STATE   JOB OR RUN     ERROR\nlist  ListNames  FAILED  ListNames#0:j  boom\n"
    )


def test_a_bulk_summary_names_each_refused_job() -> None:
    outcome = BulkOutcome(
        ok=["A#0:1", "A#0:2"], failed=[models.BulkFailure(id="A#0:3", reason="gone")], left=4
    )
    assert bulk_summary(outcome, "retried") == (
        "retried 2 jobs\n"
        "1 not retried:\n"
        "  A#0:3: no longer available (removed after the retention period, or never there)\n"
        "stopped with 4 still listed: the read model has not caught up (it lags by a second or so); "
        "run the command again\n"
    )
    assert bulk_summary(BulkOutcome(ok=["A#0:1"]), "cancelled") == "cancelled 1 job\n"
