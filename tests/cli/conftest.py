"""Running ``tsumugi`` in a temporary directory, and a fake wrangler that records its calls."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tsumugi.cli.main import main

FAKE_WRANGLER = """
import json, sys
from pathlib import Path
here = Path(sys.argv[0]).parent
calls = here / "calls.jsonl"
with calls.open("a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
behaviour = json.loads((here / "behaviour.json").read_text())
key = " ".join(sys.argv[1:3])
out, code = behaviour.get(key, ["", 0])
sys.stdout.write(out)
sys.exit(code)
"""


@dataclass
class Outcome:
    code: int
    out: str
    err: str


Tsumugi = Callable[..., Outcome]


@pytest.fixture
def tsumugi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Tsumugi:
    """``tsumugi(*argv)`` runs the CLI in ``tmp_path`` and returns exit code, stdout and stderr."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TSUMUGI_TOKEN", raising=False)
    monkeypatch.setenv("TSUMUGI_WRANGLER", "false-wrangler-never-called")

    def run(*argv: str) -> Outcome:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run


class FakeWrangler:
    """A script standing in for wrangler: answers per ``"<arg1> <arg2>"`` and logs every call."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()
        (folder / "wrangler.py").write_text(FAKE_WRANGLER)
        self.answer("--version", "4.86.0\n")

    def answer(self, key: str, stdout: str, code: int = 0) -> None:
        path = self.folder / "behaviour.json"
        behaviour = json.loads(path.read_text()) if path.exists() else {}
        behaviour[key] = [stdout, code]
        path.write_text(json.dumps(behaviour))

    @property
    def calls(self) -> list[list[str]]:
        path = self.folder / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def fake_wrangler(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> FakeWrangler:
    fake = FakeWrangler(tmp_path_factory.mktemp("bin") / "wrangler")
    script = fake.folder / "wrangler.py"
    monkeypatch.setenv("TSUMUGI_WRANGLER", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    return fake
