"""``tsumugi dev``: APP from the current directory, the default app files, ``--reload``, ``--log-level``."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from tests.cli.conftest import OPERATOR_TOKEN, Tsumugi
from tests.dev_child import DevProcess, wait_for

from tsumugi.cli import dev, source_watch
from tsumugi.errors import AppLoadError

RESTART_DEADLINE_S = 30.0
FAKE_APP = """
class FakeTsumugi:
    async def queue(self, batch, env, ctx=None): ...
    async def enqueue(self, env, **kwargs): return "X#0:x"

tsumugi = FakeTsumugi()
"""


def test_app_given_is_used_as_it_is(tmp_path: Path) -> None:
    assert dev.app_spec("pkg.module:app", tmp_path) == "pkg.module:app"


@pytest.mark.parametrize("present", [["app.py"], ["src/app.py"], ["app.py", "src/app.py"]])
def test_without_app_the_app_file_here_is_found(tmp_path: Path, present: list[str]) -> None:
    # issue 14: with no APP, `tsumugi dev` looks here (app.py, then tsumugi init's src/app.py)
    for name in present:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    assert dev.app_spec(None, tmp_path) == present[0]


def test_without_app_or_app_file_the_example_app_or_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tsumugi: Tsumugi
) -> None:
    assert dev.app_spec(None, tmp_path) is None  # a source checkout: the repository's example app
    monkeypatch.setattr(dev, "default_app_path", lambda: tmp_path / "site-packages" / "app.py")
    with pytest.raises(AppLoadError, match=r"no APP given and no app\.py or src/app\.py in "):
        dev.app_spec(None, tmp_path)
    outcome = tsumugi("dev", "--port", "0")  # an installed package has no example: say what to pass
    assert outcome.code == 1
    assert outcome.err.endswith(": name it as path/to/app.py, MODULE or MODULE:ATTR\n")


def test_a_module_in_the_current_directory_is_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tsumugi: Tsumugi
) -> None:
    # issue 14: `tsumugi dev myapp:tsumugi` without PYTHONPATH=. (here it gets as far as the taken port)
    (tmp_path / "cli_dev_module_app.py").write_text(FAKE_APP, encoding="utf-8")
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "cli_dev_module_app", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        outcome = tsumugi("dev", "cli_dev_module_app:tsumugi", "--port", str(port), "--state-dir", "s")
    sys.modules.pop("cli_dev_module_app", None)
    assert outcome.code == 1
    assert (
        outcome.err == f"tsumugi: port {port} on 127.0.0.1 is already in use (choose another with --port)\n"
    )
    assert sys.path[0] == str(tmp_path)


def test_a_log_level_outside_the_list_is_a_parser_error(tsumugi: Tsumugi) -> None:
    outcome = tsumugi("dev", "--log-level", "loud")
    assert outcome.code == 1 and outcome.err.startswith(
        "tsumugi: argument --log-level: invalid choice: 'loud'"
    )


def test_the_watcher_sees_writes_additions_and_removals_but_not_the_state_or_hidden_folders(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("a = 1\n", encoding="utf-8")
    for ignored in (".venv/lib/x.py", "state/shard.py", "__pycache__/app.py", "env/lib/y.py"):
        (tmp_path / ignored).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / ignored).write_text("", encoding="utf-8")
    (tmp_path / "env" / "pyvenv.cfg").write_text("", encoding="utf-8")  # a virtual environment
    before = source_watch.snapshot([tmp_path], [tmp_path / "state"])
    assert list(before) == [tmp_path / "app.py"]
    (tmp_path / "app.py").write_text("a = 22\n", encoding="utf-8")
    after = source_watch.snapshot([tmp_path], [tmp_path / "state"])
    assert source_watch.first_change(before, after) == tmp_path / "app.py"
    (tmp_path / ".dev.vars").write_text("TSUMUGI_TOKEN=x\n", encoding="utf-8")
    added = source_watch.snapshot([tmp_path])
    assert source_watch.first_change(after, added) == tmp_path / ".dev.vars"
    assert source_watch.first_change(added, added) is None


def _bindings(server: DevProcess) -> list[str]:
    try:
        answer = httpx.get(
            f"{server.url}/api/bindings", headers={"authorization": f"Bearer {OPERATOR_TOKEN}"}
        )
    except httpx.HTTPError:
        return []  # restarting
    return list(answer.json()["bindings"]) if answer.status_code == 200 else []


def test_reload_restarts_on_a_change_and_log_level_debug_shows_debug_lines(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    shutil.copy(Path(__file__).with_name("operator_app.py"), app)
    server = DevProcess(
        None,  # no APP: app.py in the current directory
        tmp_path / "state",
        {"TSUMUGI_TOKEN": OPERATOR_TOKEN},
        options=["--reload", "--log-level", "debug"],
    )
    headers = {"authorization": f"Bearer {OPERATOR_TOKEN}"}
    job_id = httpx.post(
        f"{server.url}/api/jobs", json={"binding": "Ok", "payload": 1}, headers=headers
    ).json()["id"]
    assert _bindings(server) == ["Fails", "Ok", "Sleeps"]
    app.write_text(
        app.read_text(encoding="utf-8").replace('{"Ok": Ok,', '{"Added": Ok, "Ok": Ok,'), encoding="utf-8"
    )
    wait_for(lambda: "Added" in _bindings(server), RESTART_DEADLINE_S, "the restarted server's new binding")
    code, output = server.terminate()
    assert code == 0, output
    assert f"tsumugi dev: {app} changed, restarting\n" in output
    assert output.count("tsumugi dev: app.py on http://") == 2 and output.count("tsumugi dev: stopped") == 2
    assert f"DEBUG operator_app: Ok performed {job_id}" in output  # --log-level reached the child
    with socket.socket() as probe:  # the child is gone with its parent: the port is free again
        # SO_REUSEADDR lets the bind pass over connections the server closed (TIME_WAIT) while
        # still refusing a port that something listens on
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", server.port))


def test_log_format_json_writes_the_lifecycle_as_json_lines(tmp_path: Path) -> None:
    # issue 14 item 9, ADR-0145: one JSON object a line, the event's fields as keys
    shutil.copy(Path(__file__).with_name("operator_app.py"), tmp_path / "app.py")
    server = DevProcess(
        None, tmp_path / "state", {"TSUMUGI_TOKEN": OPERATOR_TOKEN}, options=["--log-format", "json"]
    )
    headers = {"authorization": f"Bearer {OPERATOR_TOKEN}"}
    job_id = httpx.post(
        f"{server.url}/api/jobs", json={"binding": "Ok", "payload": 1}, headers=headers
    ).json()["id"]

    def completed() -> bool:
        answer = httpx.get(f"{server.url}/api/jobs/{quote(job_id, safe='')}", headers=headers)
        return answer.status_code == 200 and answer.json()["job"]["state"] == "COMPLETED"

    wait_for(completed, RESTART_DEADLINE_S, "the job to complete")
    code, output = server.terminate()
    assert code == 0, output
    entries = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    mine = [entry for entry in entries if entry.get("job") == job_id]
    assert [entry["message"] for entry in mine] == [
        "job enqueued",
        "job dispatched",
        "job started",
        "job succeeded",
    ]
    succeeded = mine[-1]
    assert succeeded["logger"] == "tsumugi.jobs" and succeeded["level"] == "INFO"
    assert succeeded["binding"] == "Ok" and succeeded["attempt"] == 1 and succeeded["duration_ms"] >= 0
