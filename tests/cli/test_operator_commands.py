"""The operator commands against a real ``tsumugi dev`` (api.md A-28..A-65 through the REST client).

One server per module (``operator_server``: ``tsumugi dev myapp:tsumugi``); every test works on its own jobs
and runs, told apart by a concurrency key where a filter selects them.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest
from tests.cli.conftest import OPERATOR_TOKEN, Tsumugi
from tests.dev_child import DevProcess, free_port, wait_for

from tsumugi.rest_client import TsumugiClient

DEADLINE_S = 30.0
HOUR_MS = "3600000"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _fields(text: str) -> dict[str, str]:
    """The ``name: value`` lines of a ``show`` (up to the first blank line)."""
    head = text.split("\n\n", 1)[0]
    return {name: value.strip() for name, _, value in (line.partition(":") for line in head.splitlines())}


def _enqueue(operator: Tsumugi, binding: str, payload: str = "{}", *options: str) -> str:
    outcome = operator("enqueue", binding, payload, *options)
    assert outcome.code == 0, outcome.err
    return outcome.out.strip()


def _job(operator: Tsumugi, job_id: str) -> dict[str, Any] | None:
    outcome = operator("jobs", "show", job_id, "--json")
    if outcome.code != 0:
        assert outcome.err.startswith(f"tsumugi: no job {job_id}"), outcome.err  # not projected yet
        return None
    job: dict[str, Any] = json.loads(outcome.out)["job"]
    return job


def _until_state(operator: Tsumugi, job_id: str, *states: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        job = _job(operator, job_id)
        return job if job is not None and job["state"] in states else None

    found: dict[str, Any] = wait_for(check, DEADLINE_S, f"{job_id} in {states}")
    return found


def _until_run_state(operator: Tsumugi, run_id: str, state: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        outcome = operator("runs", "show", run_id, "--json")
        answer = json.loads(outcome.out) if outcome.code == 0 else None
        return answer if answer is not None and answer["run"]["state"] == state else None

    found: dict[str, Any] = wait_for(check, DEADLINE_S, f"{run_id} {state}")
    return found


def test_the_server_runs_a_module_attr_app_from_its_directory(operator_server: DevProcess) -> None:
    # issue 14: `tsumugi dev myapp:tsumugi` finds myapp.py in the current directory (no PYTHONPATH=.)
    with operator_server.client(OPERATOR_TOKEN) as client:
        assert client.get("/api/bindings").json() == {"bindings": ["Fails", "Ok", "Sleeps"]}


def test_enqueue_prints_the_id_and_show_tells_the_outcome(operator: Tsumugi) -> None:
    # the options reach the job; A-35: the detail shows payload, result and attempts
    job_id = _enqueue(operator, "Ok", '{"n": 1}', "--priority", "3", "--max-attempts", "2")
    job = _until_state(operator, job_id, "COMPLETED")
    assert (job["priority"], job["max_attempts"]) == (3, 2)
    assert json.loads(job["result"]) == {"echo": {"n": 1}}
    shown = operator("jobs", "show", job_id)
    assert shown.code == 0, shown.err
    assert _fields(shown.out)["id"] == job_id and _fields(shown.out)["state"] == "COMPLETED"
    assert 'result:\n  {\n    "echo": {\n      "n": 1\n' in shown.out
    assert "ATTEMPT  STATE      STARTED (UTC)" in shown.out


def test_enqueue_reads_the_payload_from_stdin(operator: Tsumugi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"from": "stdin"}'))
    job_id = _enqueue(operator, "Ok", "-")
    assert json.loads(_until_state(operator, job_id, "COMPLETED")["result"]) == {"echo": {"from": "stdin"}}


def test_enqueue_json_is_the_created_answer(operator: Tsumugi) -> None:
    outcome = operator("enqueue", "Ok", "null", "--json")
    assert outcome.code == 0, outcome.err
    assert list(json.loads(outcome.out)) == ["id"] and json.loads(outcome.out)["id"].startswith("Ok#")


def test_enqueue_with_a_debounce_key_answers_the_waiting_job(operator: Tsumugi) -> None:
    # issue 16: debounce from the terminal: the second enqueue goes into the first, still waiting, job
    first = _enqueue(operator, "Ok", '{"v": 1}', "--debounce-key", "doc:1", "--debounce-ms", HOUR_MS)
    second = _enqueue(operator, "Ok", '{"v": 2}', "--debounce-key", "doc:1", "--debounce-ms", HOUR_MS)
    assert second == first
    answer = json.loads(
        operator(
            "enqueue", "Ok", '{"v": 3}', "--debounce-key", "doc:1", "--debounce-ms", HOUR_MS, "--json"
        ).out
    )
    assert (answer["id"], answer["debounced"]) == (first, True)
    job = _until_state(operator, first, "SCHEDULED")
    assert json.loads(job["payload"]) == {"v": 3}  # the last payload wins
    alone = operator("enqueue", "Ok", "{}", "--debounce-key", "doc:2")
    assert (alone.code, alone.err) == (1, "tsumugi: --debounce-key and --debounce-ms go together\n")


def test_enqueue_over_a_dropping_throttle_makes_no_job(operator: Tsumugi) -> None:
    throttle = ("--throttle-key", "mail:ana", "--throttle-tokens", "1", "--throttle-interval-ms", HOUR_MS)
    _enqueue(operator, "Ok", "{}", *throttle, "--throttle-on-excess", "drop")
    dropped = operator("enqueue", "Ok", "{}", *throttle, "--throttle-on-excess", "drop")
    assert dropped.code == 4 and dropped.out == ""
    assert dropped.err.startswith("tsumugi: the throttle dropped the job: none was made; the key's next free")
    partial = operator("enqueue", "Ok", "{}", "--throttle-key", "mail:bo")
    assert partial.code == 1 and "go together" in partial.err


def test_jobs_list_as_a_table_and_as_json(operator: Tsumugi) -> None:
    # filters; A-31: total counts every match, beyond the page
    first = _enqueue(operator, "Ok", "{}", "--concurrency-key", "listed")
    second = _enqueue(operator, "Ok", "{}", "--concurrency-key", "listed")

    def both_listed() -> dict[str, Any] | None:
        answer: dict[str, Any] = json.loads(
            operator("jobs", "list", "--concurrency-key", "listed", "--json").out
        )
        return answer if answer["total"] == 2 else None

    answer = wait_for(both_listed, DEADLINE_S, "both jobs in the read model")
    assert {job["id"] for job in answer["jobs"]} == {first, second}
    table = operator("jobs", "list", "--concurrency-key", "listed", "--sort", "created_at", "--asc")
    assert table.code == 0, table.err
    header, *rows = table.out.splitlines()
    assert header.split() == [
        "ID",
        "BINDING",
        "STATE",
        "ATTEMPTS",
        "PRIORITY",
        "CREATED",
        "(UTC)",
        "UPDATED",
        "(UTC)",
    ]
    assert [row.split()[0] for row in rows] == [first, second]
    page = operator("jobs", "list", "--concurrency-key", "listed", "--limit", "1")
    assert page.out.endswith("1 of 2 jobs shown (--limit, --offset for more)\n")


def test_bulk_retry_by_filter_with_a_progress_bar(operator: Tsumugi, monkeypatch: pytest.MonkeyPatch) -> None:
    # A-49..A-51: filter mode, paged until nothing remains; each failed job is retried once
    ids = [
        _enqueue(operator, "Fails", "{}", "--max-attempts", "1", "--concurrency-key", "bulk")
        for _ in range(3)
    ]
    for job_id in ids:
        _until_state(operator, job_id, "FAILED")
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    outcome = operator("jobs", "retry", "--state", "failed", "--concurrency-key", "bulk")
    assert (outcome.code, outcome.out) == (0, "retried 3 jobs\n")
    assert "\rretrying [" in terminal.getvalue() and terminal.getvalue().endswith("] 3/3\n")
    for job_id in ids:  # each ran once more, and failed again
        wait_for(lambda job_id=job_id: len(_until_state(operator, job_id, "FAILED")["attempts_log"]) == 2,
                 DEADLINE_S, f"{job_id}'s second attempt")  # fmt: skip


def test_bulk_retry_by_ids_reports_the_refused_ones(operator: Tsumugi) -> None:
    # accepted ids, and refusals with their reason; exit 4 when any was refused
    failed = [_enqueue(operator, "Fails", "{}", "--max-attempts", "1") for _ in range(2)]
    done = _enqueue(operator, "Ok")
    for job_id in failed:
        _until_state(operator, job_id, "FAILED")
    _until_state(operator, done, "COMPLETED")
    outcome = operator("jobs", "retry", *failed, done, "--json")
    assert outcome.code == 4, outcome.err
    answer = json.loads(outcome.out)
    assert sorted(answer["ok"]) == sorted(failed) and answer["remaining"] == 0
    assert answer["failed"] == [{"id": done, "reason": "invalid-state"}]


def test_retrying_a_completed_job_is_refused(operator: Tsumugi) -> None:
    # retry only from FAILED or STALLED; 409 -> exit 4 and the reason in words
    job_id = _enqueue(operator, "Ok")
    _until_state(operator, job_id, "COMPLETED")
    outcome = operator("jobs", "retry", job_id)
    assert (outcome.code, outcome.out) == (4, "")
    assert outcome.err == f"tsumugi: job {job_id} was not retried: not allowed in its current state\n"


def test_cancel_and_reschedule_scheduled_jobs(operator: Tsumugi) -> None:
    # cancel a SCHEDULED job: reschedule one to now, with a new priority
    cancelled = _enqueue(operator, "Ok", "{}", "--delay-ms", HOUR_MS)
    outcome = operator("jobs", "cancel", cancelled)
    assert (outcome.code, outcome.out) == (0, f"cancelled job {cancelled}\n"), outcome.err
    _until_state(operator, cancelled, "CANCELLED")
    moved = _enqueue(operator, "Ok", "{}", "--delay-ms", HOUR_MS)
    outcome = operator("jobs", "reschedule", moved, "--delay-ms", "0", "--priority", "7")
    assert (outcome.code, outcome.out) == (0, f"rescheduled job {moved}\n"), outcome.err
    assert _until_state(operator, moved, "COMPLETED")["priority"] == 7


def test_cancel_of_a_running_job_asks_it_to_stop(operator: Tsumugi) -> None:
    # J-135: a running job gets a cancellation request, sees it at its heartbeat, and ends CANCELLED
    job_id = _enqueue(operator, "Sleeps")

    def performing() -> bool:  # J-107: an at-least-once job stays QUEUED while it runs; it beats progress
        job = _job(operator, job_id)
        return job is not None and job["progress"] is not None

    wait_for(performing, DEADLINE_S, f"{job_id} performing")
    outcome = operator("jobs", "cancel", job_id)
    assert outcome.code == 0, outcome.err
    assert outcome.out.startswith(f"asked job {job_id} to stop: it is queued or running")
    _until_state(operator, job_id, "CANCELLED")


def test_bulk_cancel_by_ids(operator: Tsumugi) -> None:
    ids = [_enqueue(operator, "Ok", "{}", "--delay-ms", HOUR_MS) for _ in range(2)]
    outcome = operator("jobs", "cancel", *ids)
    assert (outcome.code, outcome.out) == (0, "cancelled 2 jobs\n"), outcome.err


def test_runs_list_show_resume_and_cancel(operator: Tsumugi, operator_server: DevProcess) -> None:
    # A-59..A-61 read: resume (the run's retry) a FAILED run, cancel a RUNNING one
    with TsumugiClient(operator_server.url, OPERATOR_TOKEN) as client:
        failing = client.start_run("FAILING", {"try": 1})
        waiting = client.start_run("WAITING", None)
    _until_run_state(operator, failing, "FAILED")
    listed = operator("runs", "list", "--state", "failed", "--flow", "FAILING")
    assert listed.code == 0 and failing in listed.out and listed.out.startswith("ID ")
    shown = operator("runs", "show", failing)
    assert _fields(shown.out)["state"] == "FAILED (resumable)" and '"try": 1' in shown.out
    assert [line.split()[:3] for line in shown.out.splitlines() if line.startswith("only ")] == [
        ["only", "Fails", "FAILED"]
    ]
    resumed = operator("runs", "resume", failing)
    assert (resumed.code, resumed.out) == (0, f"resumed run {failing}\n"), resumed.err
    _until_run_state(operator, waiting, "RUNNING")
    cancelled = operator("runs", "cancel", waiting)
    assert (cancelled.code, cancelled.out) == (0, f"cancelled run {waiting}\n"), cancelled.err
    _until_run_state(operator, waiting, "CANCELLED")
    again = operator("runs", "cancel", waiting)
    assert (again.code, again.err) == (
        4,
        f"tsumugi: run {waiting} was not cancelled: not allowed in its current state\n",
    )
    missing = operator("runs", "show", "WAITING:nowhere")
    assert (missing.code, missing.err) == (4, "tsumugi: no run WAITING:nowhere\n")


def test_stats_as_a_table_and_as_json(operator: Tsumugi) -> None:
    #
    _until_state(operator, _enqueue(operator, "Ok"), "COMPLETED")
    table = operator("stats")
    assert table.code == 0 and table.out.startswith("STATE      JOBS\n")
    assert "COMPLETED" in table.out and "oldest scheduled job: " in table.out
    answer = json.loads(operator("stats", "--json").out)
    assert set(answer) == {"byState", "oldestScheduledMs"} and answer["byState"]["COMPLETED"] >= 1


def test_a_wrong_or_missing_token_is_exit_3(tsumugi: Tsumugi, operator_server: DevProcess) -> None:
    url = operator_server.url
    wrong = tsumugi("stats", "--url", url, "--token", "not-the-token")
    assert (wrong.code, wrong.err) == (3, f"tsumugi: the token was refused by {url} (401)\n")
    missing = tsumugi("jobs", "list", "--url", url)
    assert missing.code == 3
    assert missing.err.startswith(f"tsumugi: {url} asks for a token (401): pass --token, set TSUMUGI_TOKEN")


def test_url_and_token_from_the_environment_and_dev_vars(
    tsumugi: Tsumugi, operator_server: DevProcess, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TSUMUGI_URL", operator_server.url)
    (tmp_path / ".dev.vars").write_text(f'TSUMUGI_TOKEN="{OPERATOR_TOKEN}"\n', encoding="utf-8")
    assert tsumugi("stats").code == 0  # the token from .dev.vars
    monkeypatch.setenv("TSUMUGI_TOKEN", "from-the-environment")
    assert tsumugi("stats").code == 3  # the environment wins over .dev.vars, as for `tsumugi dev`
    assert tsumugi("stats", "--token", OPERATOR_TOKEN).code == 0  # and --token over both


def test_an_unreachable_server_is_exit_2_and_names_the_url(tsumugi: Tsumugi) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    outcome = tsumugi("--url", url, "jobs", "--json", "list")  # options before the command and subcommand
    assert outcome.code == 2
    assert outcome.err == (
        f"tsumugi: cannot connect to {url} (connection refused): is the server running? "
        "Pass --url or set TSUMUGI_URL\n"
    )


def test_refused_requests_are_exit_4(operator: Tsumugi) -> None:
    unknown = operator("jobs", "show", "Ok#0:nosuchjob")
    assert unknown.code == 4 and unknown.err.startswith("tsumugi: no job Ok#0:nosuchjob")
    binding = operator("enqueue", "Nope", "{}")
    assert (binding.code, binding.err) == (
        4,
        "tsumugi: the server refused the request (400): unknown binding: Nope\n",
    )
    gone = operator("jobs", "cancel", "Ok#0:nosuchjob")
    assert gone.code == 4 and "was not cancelled: no longer available" in gone.err


def test_the_console_command_exits_with_the_documented_code(operator_server: DevProcess) -> None:
    command = [
        sys.executable,
        "-m",
        "tsumugi.cli.main",
        "stats",
        "--url",
        operator_server.url,
        "--token",
        "no",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert finished.returncode == 3 and "the token was refused" in finished.stderr


def test_runs_event_completes_the_waiting_node(operator: Tsumugi, operator_server: DevProcess) -> None:
    # issue 16: `tsumugi runs event` sends the event a wait-for-event node waits for
    with TsumugiClient(operator_server.url, OPERATOR_TOKEN) as client:
        run_id = client.start_run("APPROVAL", None)
    _until_run_state(operator, run_id, "RUNNING")
    bad = operator("runs", "event", run_id, "order.approved", "{not json")
    assert bad.code == 1 and bad.err.startswith("tsumugi: ")
    sent = operator("runs", "event", run_id, "order.approved", '{"by": "ops"}')
    assert sent.code == 0, sent.err
    assert sent.out in ("node approval took event order.approved\n",
                        "event order.approved is kept until node approval waits for it\n")  # fmt: skip
    done = _until_run_state(operator, run_id, "COMPLETED")
    ship = next(node for node in done["nodes"] if node["id"] == "ship")
    shipped = json.loads(operator("jobs", "show", ship["job_id"], "--json").out)
    assert json.loads(shipped["job"]["result"]) == {"echo": {"by": "ops"}}  # the payload was its input
    again = operator("runs", "event", run_id, "order.approved", "{}")
    assert (again.code, again.err) == (4, "tsumugi: event order.approved was refused: already satisfied\n")
    missing = operator("runs", "event", "APPROVAL:nowhere", "order.approved")
    assert (missing.code, missing.err) == (4, "tsumugi: no run APPROVAL:nowhere\n")
