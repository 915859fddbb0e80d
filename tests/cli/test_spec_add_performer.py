"""``tsumugi add-performer`` through the command line, rule by rule (C-13..C-16; ADR-0087)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from tests.cli.conftest import Tsumugi


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src/performers").mkdir(parents=True)
    return tmp_path


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("raw", "class_name", "module"),
    [
        ("SEND_MAIL", "SendMail", "send_mail"),
        ("sendMail", "SendMail", "send_mail"),
        ("HTTPFetch", "HttpFetch", "http_fetch"),
        ("hello", "Hello", "hello"),
    ],
)
def test_names_on_the_command_line(
    tsumugi: Tsumugi, project: Path, raw: str, class_name: str, module: str
) -> None:
    # C-13: class PascalCase, file base from the same words; C-15: the log names both
    outcome = tsumugi("add-performer", raw)
    assert outcome.code == 0, outcome.err
    assert outcome.out.startswith(
        f"created src/performers/{module}.py\nadded {class_name} to src/performers/__init__.py\n"
    )
    assert f"class {class_name}(Performer):" in (project / f"src/performers/{module}.py").read_text()


@pytest.mark.parametrize("raw", ["", "9lives", "hello/world", "---"])
def test_names_without_a_class_write_nothing(tsumugi: Tsumugi, project: Path, raw: str) -> None:
    # C-13: `tsumugi: cannot derive a class name from "<raw>"` + a hint, exit 1
    outcome = tsumugi("add-performer", raw)
    assert outcome.code == 1
    first, hint = outcome.err.split("\n", 1)
    assert first == f'tsumugi: cannot derive a class name from "{raw}"' and hint.strip()
    assert _files(project) == {}


def test_the_class_name_must_be_a_whole_word(tsumugi: Tsumugi, project: Path) -> None:
    # C-14: SendMailer is not SendMail; but SendMail anywhere as a whole word blocks
    index = project / "src/performers/__init__.py"
    index.write_text("from .send_mailer import SendMailer\n")
    assert tsumugi("add-performer", "send-mail").code == 0
    assert index.read_text() == "from .send_mailer import SendMailer\nfrom .send_mail import SendMail\n"

    index.write_text("# Charge is planned\n")
    before = _files(project)
    outcome = tsumugi("add-performer", "charge")
    assert outcome.code == 1 and "Charge is already in src/performers/__init__.py" in outcome.err
    assert _files(project) == before


def test_existing_lines_stay_byte_for_byte(tsumugi: Tsumugi, project: Path) -> None:
    # C-15: exactly one line appended; nothing existing is rewritten (comments, spacing, order)
    original = '"""Mine."""\n\nfrom .b import B  # keep\n\n\nfrom .a import A\n'
    (project / "src/performers/__init__.py").write_text(original)
    assert tsumugi("add-performer", "c").code == 0
    assert (project / "src/performers/__init__.py").read_text() == original + "from .c import C\n"


def test_project_config_is_never_modified(tsumugi: Tsumugi, project: Path) -> None:
    # C-16: TOML fragment for a wrangler.toml project, with the worker's name; the config is untouched
    original = 'name = "billing"\nmain = "src/entry.py"\n'
    (project / "wrangler.toml").write_text(original)
    outcome = tsumugi("add-performer", "charge-card")
    assert outcome.code == 0
    assert (project / "wrangler.toml").read_text() == original
    fragment = outcome.out.split("wrangler.toml:\n\n", 1)[1]
    assert tomllib.loads(fragment) == {
        "services": [{"binding": "ChargeCard", "service": "billing", "entrypoint": "ChargeCard"}]
    }
    assert "#" not in fragment  # complete: no guidance comment


def test_jsonc_fragment_without_a_config(tsumugi: Tsumugi, project: Path) -> None:
    # C-16: no wrangler file -> JSONC, service "<worker>" and the guidance comment
    outcome = tsumugi("add-performer", "charge")
    fragment = outcome.out.split("wrangler.jsonc:\n\n", 1)[1]
    assert "// set service and entrypoint to the target Worker name and class name" in fragment
    assert '"service": "<worker>"' in fragment and '"entrypoint": "Charge"' in fragment
    assert not (project / "wrangler.jsonc").exists()


def test_a_failed_second_add_writes_nothing(tsumugi: Tsumugi, project: Path) -> None:
    # C-14: adding the same performer twice fails the second time, and leaves the first intact
    assert tsumugi("add-performer", "send-mail").code == 0
    before = _files(project)
    outcome = tsumugi("add-performer", "SendMail")
    assert outcome.code == 1 and outcome.err.startswith("tsumugi: src/performers/send_mail.py already exists")
    assert _files(project) == before
