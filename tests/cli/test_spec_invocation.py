"""Invocation rules of the ``tsumugi`` command line, checked rule by rule (C-1..C-6, C-20)."""

from __future__ import annotations

import io
import sys
from importlib import metadata
from pathlib import Path

import pytest
from tests.cli.conftest import Tsumugi

from tsumugi.cli import main as cli_main

USAGE_HEAD = "usage: tsumugi <command> [options]\n"


def test_version_is_the_package_version(tsumugi: Tsumugi) -> None:
    # C-1: --version prints the package version, exit 0
    outcome = tsumugi("--version")
    assert (outcome.code, outcome.out, outcome.err) == (0, metadata.version("tsumugi") + "\n", "")


def test_version_is_unknown_when_it_cannot_be_read(tsumugi: Tsumugi, monkeypatch: pytest.MonkeyPatch) -> None:
    # C-1: `unknown` if the version cannot be read
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(cli_main.metadata, "version", missing)
    outcome = tsumugi("--version")
    assert (outcome.code, outcome.out) == (0, "unknown\n")


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("-h",), ("--help", "--version"), ("--version", "--help"), ("frob", "--help")],
)
def test_help_goes_to_stdout_and_wins(tsumugi: Tsumugi, argv: tuple[str, ...]) -> None:
    # C-1: usage on stdout, exit 0; --help wins over --version and over any command, even an unknown one
    outcome = tsumugi(*argv)
    assert outcome.code == 0 and outcome.err == ""
    assert outcome.out.startswith(USAGE_HEAD)
    assert metadata.version("tsumugi") + "\n" != outcome.out


def test_usage_lists_both_commands_before_the_port_s_extras(tsumugi: Tsumugi) -> None:
    # C-2: the two commands, the options --name, --format (default jsonc), --help, --version
    out = tsumugi("--help").out
    commands = out.split("commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert commands[0].split()[0] == "init" and commands[1].split()[0] == "add-performer"
    options = out.split("options:\n", 1)[1]
    for option in ("--name <name>", "--format", "--help", "--version"):
        assert option in options
    format_line = next(line for line in options.splitlines() if "--format" in line)
    assert "jsonc" in format_line and "toml" in format_line and "default jsonc" in format_line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--bogus",), "unrecognized arguments: --bogus"),
        (("-V",), "unrecognized arguments: -V"),
        (("--name",), "argument --name: expected one argument"),
        (("init", "--form", "toml"), "unrecognized arguments: --form"),  # no abbreviations
        (("init", "--nam", "w"), "unrecognized arguments: --nam"),
        (("add-performer", "x", "--force"), "unrecognized arguments: --force"),
    ],
)
def test_unknown_options_are_parser_errors(
    tsumugi: Tsumugi, tmp_path: Path, argv: tuple[str, ...], message: str
) -> None:
    # C-3: strict parsing: `tsumugi: <parser message>` + usage on stderr, exit 1, nothing written
    outcome = tsumugi(*argv)
    assert outcome.code == 1 and outcome.out == ""
    assert outcome.err.startswith(f"tsumugi: {message}\n{USAGE_HEAD}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [(), ("--name", "w"), ("--format", "toml")])
def test_no_command_is_usage_on_stderr(tsumugi: Tsumugi, tmp_path: Path, argv: tuple[str, ...]) -> None:
    # C-3: no command (not a terminal) -> usage on stderr, exit 1
    outcome = tsumugi(*argv)
    assert (outcome.code, outcome.out) == (1, "")
    assert outcome.err.startswith(USAGE_HEAD) and "tsumugi: " not in outcome.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [("frob",), ("--format", "toml", "frob"), ("Init",)])
def test_unknown_command(tsumugi: Tsumugi, argv: tuple[str, ...]) -> None:
    # C-3: `tsumugi: unknown command "<cmd>"` + usage, exit 1
    outcome = tsumugi(*argv)
    assert outcome.code == 1
    assert outcome.err.startswith(f'tsumugi: unknown command "{argv[-1]}"\n{USAGE_HEAD}')


def test_options_may_come_before_the_command(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-1: one parse of the whole line, as the original's: `tsumugi --name w --format toml init`
    outcome = tsumugi("--name", "w", "--format", "toml", "init")
    assert outcome.code == 0, outcome.err
    assert 'name = "w"' in (tmp_path / "wrangler.toml").read_text()


@pytest.mark.parametrize(
    "argv",
    [
        ("add-performer", "x", "--name", "w"),
        ("--format", "toml", "add-performer", "x"),
        ("doctor", "--name", "w"),
        ("dev", "--format", "toml"),
    ],
)
def test_init_options_elsewhere(tsumugi: Tsumugi, tmp_path: Path, argv: tuple[str, ...]) -> None:
    # C-5: --name/--format with another command -> the fixed message, exit 1, nothing written
    outcome = tsumugi(*argv)
    assert (outcome.code, outcome.err) == (1, "tsumugi: --name and --format are only valid with init\n")
    assert list(tmp_path.iterdir()) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_arguments_on_a_terminal_opens_the_menu(
    tsumugi: Tsumugi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # C-6, C-20: stdin and stdout both terminals -> the interactive menu; "exit" leaves with 0
    monkeypatch.setattr("sys.stdin", _Terminal("exit\n"))
    monkeypatch.setattr("sys.stdout", _Terminal())
    assert cli_main.main([]) == 0
    out = sys.stdout
    assert isinstance(out, _Terminal) and "what do you want to do?" in out.getvalue()
    assert list(tmp_path.iterdir()) == []


def test_only_stdin_a_terminal_is_not_interactive(tsumugi: Tsumugi, monkeypatch: pytest.MonkeyPatch) -> None:
    # C-6: both must be terminals; otherwise C-3's usage on stderr, exit 1
    monkeypatch.setattr("sys.stdin", _Terminal("init\n"))
    outcome = tsumugi()
    assert outcome.code == 1 and outcome.err.startswith(USAGE_HEAD)


@pytest.mark.parametrize("argv", [("init", "-h"), ("--name", "w", "init", "--help")])
def test_help_of_a_command(tsumugi: Tsumugi, argv: tuple[str, ...]) -> None:
    # C-1, C-2: the usage, then the command's own flags (init: --format jsonc|toml)
    outcome = tsumugi(*argv)
    assert outcome.code == 0 and outcome.out.startswith(USAGE_HEAD)
    assert "usage: tsumugi init [--name NAME] [--format jsonc|toml]" in outcome.out
