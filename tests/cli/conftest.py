"""Running ``tsumugi`` in a temporary directory, a fake wrangler that records its calls, and a real
``tsumugi dev`` serving ``operator_app.py`` for the operator commands."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.dev_child import DevProcess

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
    monkeypatch.delenv("TSUMUGI_URL", raising=False)
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


OPERATOR_TOKEN = "cli-operator-token"


@pytest.fixture(scope="module")
def operator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    """``tsumugi dev myapp:tsumugi`` in a folder holding ``myapp.py`` (a copy of ``operator_app.py``).

    PYTHONSAFEPATH keeps ``python -m`` from putting that folder on ``sys.path`` itself, as the ``tsumugi``
    console script does not: the module is found only because ``tsumugi dev`` puts it there.
    """
    folder = tmp_path_factory.mktemp("operator")
    shutil.copy(Path(__file__).with_name("operator_app.py"), folder / "myapp.py")
    env = {"TSUMUGI_TOKEN": OPERATOR_TOKEN, "PYTHONSAFEPATH": "1"}
    dev = DevProcess("myapp:tsumugi", folder / "state", env)
    yield dev
    code, output = dev.terminate()
    assert code == 0, output


@pytest.fixture
def operator(tsumugi: Tsumugi, operator_server: DevProcess) -> Tsumugi:
    """``operator(*argv)``: ``tsumugi *argv --url <the server> --token <its token>``."""

    def run(*argv: str) -> Outcome:
        return tsumugi(*argv, "--url", operator_server.url, "--token", OPERATOR_TOKEN)

    return run
