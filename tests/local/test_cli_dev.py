"""`tsumugi dev` arguments and its clear errors: bad app, port in use, unwritable state dir."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tsumugi.cli.main import main

FAKE_APP = """
class FakeTsumugi:
    async def queue(self, batch, env, ctx=None): ...
    async def enqueue(self, env, **kwargs): return "X#0:x"

tsumugi = FakeTsumugi()
"""


@pytest.fixture
def fake_app(tmp_path: Path) -> str:
    path = tmp_path / "cli_fake_app.py"
    path.write_text(FAKE_APP, encoding="utf-8")
    return str(path)


def test_help_lists_dev_and_version_prints_a_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tsumugi <command> [options]") and "  dev " in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() != ""


def test_an_unknown_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # C-3: unknown command -> `tsumugi: unknown command "<cmd>"` + usage, exit 1
    assert main(["serve"]) == 1
    assert capsys.readouterr().err.startswith('tsumugi: unknown command "serve"\nusage: tsumugi')


def test_an_unknown_option_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", "--nope"]) == 1
    assert capsys.readouterr().err.startswith("tsumugi: unrecognized arguments: --nope")


def test_a_bad_app_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["dev", str(tmp_path / "nowhere.py"), "--state-dir", str(tmp_path / "s")]) == 1
    assert capsys.readouterr().err == f"tsumugi: the app file {tmp_path / 'nowhere.py'} does not exist\n"


def test_a_port_in_use_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fake_app: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["dev", fake_app, "--port", str(port), "--state-dir", str(tmp_path / "s")])
    assert code == 1
    assert capsys.readouterr().err == (
        f"tsumugi: port {port} on 127.0.0.1 is already in use (choose another with --port)\n"
    )


def test_an_unwritable_state_dir_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fake_app: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    assert main(["dev", fake_app, "--port", "0", "--state-dir", str(blocker / "state")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tsumugi: the state directory {blocker / 'state'} is not writable")
