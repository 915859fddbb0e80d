"""The command registry and usage text (C-1, C-2, C-3) as far as init/add-performer/doctor add to them."""

from __future__ import annotations

from tests.cli.conftest import Tsumugi


def test_usage_lists_the_commands_and_init_options(tsumugi: Tsumugi) -> None:
    # C-2: headed `usage: tsumugi <command> [options]`; --name, --format (default jsonc), --help, --version
    outcome = tsumugi("--help")
    assert outcome.code == 0
    assert outcome.out.startswith("usage: tsumugi <command> [options]\n")
    for command in ("  init ", "  add-performer ", "  doctor "):
        assert command in outcome.out
    for option in ("--name", "--format", "default jsonc", "--help", "--version"):
        assert option in outcome.out


def test_no_command_is_usage_on_stderr(tsumugi: Tsumugi) -> None:
    # C-3: no command (non-interactive) -> usage on stderr, exit 1
    outcome = tsumugi()
    assert outcome.code == 1
    assert outcome.err.startswith("usage: tsumugi <command> [options]")


def test_help_wins_anywhere_on_the_line(tsumugi: Tsumugi) -> None:
    # C-1: --help wins over --version, and both win over commands
    for argv in (("init", "--help"), ("--version", "--help"), ("doctor", "--bogus", "-h")):
        outcome = tsumugi(*argv)
        assert outcome.code == 0, argv
        assert outcome.out.startswith("usage: tsumugi <command> [options]\n"), argv


def test_version_wins_over_commands(tsumugi: Tsumugi) -> None:
    # C-1: --version prints the package version and exits 0, even after a command
    outcome = tsumugi("init", "--version")
    assert outcome.code == 0
    assert outcome.out.strip() and "usage" not in outcome.out
