"""``tsumugi add-performer NAME`` (C-5, C-13..C-16; ADR-0087)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import json5
import pytest
from tests.cli.conftest import Tsumugi

from tsumugi.cli.project_names import performer_names
from tsumugi.errors import CommandLineError


@pytest.mark.parametrize("raw", ["send-mail", "sendMail", "SendMail", "SEND_MAIL", "send mail"])
def test_name_forms_give_one_class_and_module(raw: str) -> None:
    # C-13: PascalCase class; the file base is snake_case so Python can import it (ADR-0087)
    names = performer_names(raw)
    assert (names.class_name, names.module) == ("SendMail", "send_mail")


@pytest.mark.parametrize(
    ("raw", "class_name", "module"),
    [
        ("hello", "Hello", "hello"),
        ("HTTPFetch", "HttpFetch", "http_fetch"),
        ("getURLFor2", "GetUrlFor2", "get_url_for2"),
    ],
)
def test_acronym_runs(raw: str, class_name: str, module: str) -> None:
    # C-13: acronym runs end before a capitalised word
    assert performer_names(raw) == type(performer_names("x"))(class_name, module)


@pytest.mark.parametrize("raw", ["", "9lives", "hello/world", "---", "import", "true"])
def test_names_without_a_class(raw: str) -> None:
    # C-13: the class must match ^[A-Z][A-Za-z0-9]*$ (and, for Python, not be a keyword)
    with pytest.raises(CommandLineError, match=f'^cannot derive a class name from "{raw}"\n'):
        performer_names(raw)


def test_adds_a_module_and_one_export_line(tsumugi: Tsumugi, tmp_path: Path) -> None:
    assert tsumugi("init", "--name", "mailer").code == 0
    index = tmp_path / "src/performers/__init__.py"
    before = index.read_text()
    outcome = tsumugi("add-performer", "send-mail")
    assert outcome.code == 0, outcome.err
    # C-15: the module, then exactly one appended line; the log names both
    module = tmp_path / "src/performers/send_mail.py"
    assert "class SendMail(Performer):" in module.read_text()
    compile(module.read_text(), "send_mail.py", "exec")
    assert index.read_text() == before + "from .send_mail import SendMail\n"
    assert (
        "created src/performers/send_mail.py\nadded SendMail to src/performers/__init__.py\n" in outcome.out
    )
    # C-16: a services fragment for another Worker, in the project's format, complete here
    fragment = outcome.out.split("wrangler.jsonc:\n\n", 1)[1]
    assert json5.loads("{" + fragment + "}")["services"] == [
        {"binding": "SendMail", "service": "mailer", "entrypoint": "SendMail"}
    ]
    assert "//" not in fragment
    assert json5.loads((tmp_path / "wrangler.jsonc").read_text()).get("services") is None


def test_toml_project_and_unknown_worker(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-16: TOML for a wrangler.toml project; "<worker>" with a guidance comment when the name is unknown
    (tmp_path / "src/performers").mkdir(parents=True)
    (tmp_path / "wrangler.toml").write_text("[vars]\nname = 'not top level'\n")
    outcome = tsumugi("add-performer", "Charge")
    assert outcome.code == 0
    fragment = outcome.out.split("wrangler.toml:\n\n", 1)[1]
    assert "# set service and entrypoint to the target Worker name and class name" in fragment
    assert tomllib.loads(fragment)["services"] == [
        {"binding": "Charge", "service": "<worker>", "entrypoint": "Charge"}
    ]
    # C-15: a missing index is created with its header
    index = (tmp_path / "src/performers/__init__.py").read_text()
    assert index.startswith('"""') and index.endswith("from .charge import Charge\n")


def test_index_without_trailing_newline(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-15: a newline goes in first; existing lines are never changed
    (tmp_path / "src/performers").mkdir(parents=True)
    (tmp_path / "src/performers/__init__.py").write_text("from .a import A")
    assert tsumugi("add-performer", "b").code == 0
    assert (tmp_path / "src/performers/__init__.py").read_text() == "from .a import A\nfrom .b import B\n"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({}, "tsumugi: src/performers/ does not exist; run `tsumugi init` first"),
        ({"src/performers/send_mail.py": ""}, "tsumugi: src/performers/send_mail.py already exists"),
        ({"src/performers/__init__.py": "from .x import SendMail\n"}, "tsumugi: SendMail is already in"),
        ({"src/performers/__init__.py": "from .send_mail import Other\n"}, "already imports .send_mail"),
    ],
)
def test_preconditions_write_nothing(
    tsumugi: Tsumugi, tmp_path: Path, setup: dict[str, str], message: str
) -> None:
    # C-14: each failing precondition exits 1 and writes nothing
    if setup:
        (tmp_path / "src/performers").mkdir(parents=True)
    for relative, text in setup.items():
        (tmp_path / relative).write_text(text)
    outcome = tsumugi("add-performer", "SendMail")
    assert outcome.code == 1
    assert message in outcome.err
    written = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == setup


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["add-performer"],
            "add-performer requires exactly one name, e.g. `tsumugi add-performer send-mail`",
        ),
        (["add-performer", "a", "b"], "add-performer requires exactly one name"),
        (["add-performer", "a", "--name", "w"], "--name and --format are only valid with init"),
        (["add-performer", "a", "--format", "toml"], "--name and --format are only valid with init"),
        (["add-performer", "9lives"], 'cannot derive a class name from "9lives"'),
    ],
)
def test_argument_errors(tsumugi: Tsumugi, argv: list[str], message: str) -> None:
    # C-5, C-13
    outcome = tsumugi(*argv)
    assert outcome.code == 1
    assert outcome.err.startswith(f"tsumugi: {message}")
