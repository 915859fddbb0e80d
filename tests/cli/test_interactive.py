"""Interactive mode (C-20), driven by scripted answers instead of a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.conftest import Tsumugi

from tsumugi.cli.interactive import CANCELED, Ask, run_interactive


def scripted(*answers: str) -> tuple[Ask, list[str]]:
    """An ``input`` stand-in: returns the answers in order, then raises EOFError (end of input)."""
    prompts: list[str] = []
    queue: Iterator[str] = iter(answers)

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return ask, prompts


@pytest.mark.parametrize("answers", [("3",), ("exit",), ()])
def test_exit_or_cancel_at_the_menu(tsumugi: Tsumugi, tmp_path: Path, answers: tuple[str, ...]) -> None:
    ask, _ = scripted(*answers)
    assert run_interactive(ask, tmp_path) == 0
    assert list(tmp_path.iterdir()) == []


def test_init_asks_name_format_and_confirmation(
    tsumugi: Tsumugi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ask, prompts = scripted("1", "", "toml", "y")
    assert run_interactive(ask, tmp_path) == 0
    default = tmp_path.name.lower().replace("_", "-")
    assert prompts[1] == f"worker name? ({default}) "
    assert prompts[2].startswith("configuration format")
    assert "write wrangler.toml" in prompts[3] and prompts[3].endswith("[y/N] ")
    assert (tmp_path / "wrangler.toml").is_file() and (tmp_path / "src/entry.py").is_file()
    assert "what do you want to do?" in capsys.readouterr().out


def test_init_with_an_existing_config_skips_the_format_question(tsumugi: Tsumugi, tmp_path: Path) -> None:
    (tmp_path / "wrangler.jsonc").write_text('{"name": "here"}')
    ask, prompts = scripted("init", "", "yes")
    assert run_interactive(ask, tmp_path) == 0
    assert prompts[1] == "worker name? (here) "
    assert "leave wrangler.jsonc unchanged" in prompts[2]
    assert (tmp_path / "wrangler.jsonc").read_text() == '{"name": "here"}'


@pytest.mark.parametrize(
    "answers", [("1", "w", "jsonc", ""), ("1", "w", "jsonc", "n"), ("1", "w"), ("2", "")]
)
def test_declining_or_cancelling_writes_nothing(
    tsumugi: Tsumugi, tmp_path: Path, capsys: pytest.CaptureFixture[str], answers: tuple[str, ...]
) -> None:
    ask, _ = scripted(*answers)
    assert run_interactive(ask, tmp_path) == 1
    assert capsys.readouterr().out.endswith(f"{CANCELED}\n")
    assert list(tmp_path.iterdir()) == []


def test_add_performer_validates_before_confirming(
    tsumugi: Tsumugi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "src/performers").mkdir(parents=True)
    ask, prompts = scripted("2", "9lives")
    assert run_interactive(ask, tmp_path) == 1
    assert len(prompts) == 2  # no confirmation for an invalid name
    assert 'tsumugi: cannot derive a class name from "9lives"' in capsys.readouterr().err

    ask, prompts = scripted("2", "sendMail", "y")
    assert run_interactive(ask, tmp_path) == 0
    assert prompts[2] == "create src/performers/send_mail.py with class SendMail? [y/N] "
    assert (tmp_path / "src/performers/send_mail.py").is_file()
