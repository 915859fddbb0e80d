"""The installed ``tsumugi`` console script, run as a user runs it (C-1, C-3, C-9, C-10, C-15)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "tsumugi"

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="the tsumugi console script is not installed")


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TSUMUGI_WRANGLER": "false-wrangler-never-called"}
    env.pop("TSUMUGI_TOKEN", None)
    return subprocess.run(
        [str(SCRIPT), *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_help_version_and_errors(tmp_path: Path) -> None:
    # C-1: --help on stdout, exit 0; --version, exit 0
    helped = _run(tmp_path, "--help")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("usage: tsumugi <command> [options]\n")
    assert _run(tmp_path, "--version").returncode == 0
    # C-3: no command (stdin is not a terminal) -> usage on stderr, exit 1; unknown command
    bare = _run(tmp_path)
    assert (bare.returncode, bare.stdout) == (1, "")
    assert bare.stderr.startswith("usage: tsumugi <command> [options]\n")
    unknown = _run(tmp_path, "frob")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith('tsumugi: unknown command "frob"\nusage: tsumugi <command> [options]\n')
    assert list(tmp_path.iterdir()) == []


def test_init_then_add_performer(tmp_path: Path) -> None:
    # C-9, C-10: a project without wrangler calls, exit 0; C-15: a performer and its export line
    init = _run(tmp_path, "init", "--name", "demo")
    assert init.returncode == 0, init.stderr
    assert (tmp_path / "wrangler.jsonc").is_file() and (tmp_path / ".dev.vars").is_file()
    added = _run(tmp_path, "add-performer", "send-mail")
    assert added.returncode == 0, added.stderr
    index = (tmp_path / "src/performers/__init__.py").read_text()
    assert index.endswith("from .send_mail import SendMail\n")
    # C-14, C-12: the same again fails, exit 1, nothing changed
    again = _run(tmp_path, "add-performer", "send-mail")
    assert again.returncode == 1 and again.stderr.startswith("tsumugi: ")
    assert (tmp_path / "src/performers/__init__.py").read_text() == index
