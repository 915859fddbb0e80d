"""The ``tsumugi`` command: dispatches to one module per subcommand (``tsumugi.cli.<name>``).

A subcommand module defines ``SUMMARY`` (one line for the usage text), ``add_arguments(parser)`` and
``run(args) -> int`` (the exit code). Register it in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib import metadata
from types import ModuleType
from typing import NoReturn

COMMANDS: dict[str, str] = {
    "init": "tsumugi.cli.init",
    "add-performer": "tsumugi.cli.add_performer",
    "doctor": "tsumugi.cli.doctor",
    "dev": "tsumugi.cli.dev",
}
# How each command is called, for the usage text (C-2).
_SYNOPSES: dict[str, str] = {
    "init": "init [DIR]",
    "add-performer": "add-performer <NAME>",
    "doctor": "doctor [DIR]",
    "dev": "dev [APP]",
}
# The options that take a value when they come before the command (C-1: `tsumugi --name w init`).
_GLOBAL_VALUE_OPTIONS = ("--name", "--format")


class _Parser(argparse.ArgumentParser):
    """Parse errors print ``tsumugi: <message>`` and the usage on stderr, exit 1 (C-3)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"tsumugi: {message}\n{usage()}")
        raise SystemExit(1)


def usage() -> str:
    lines = ["usage: tsumugi <command> [options]", "", "commands:"]
    for name in COMMANDS:
        lines.append(f"  {_SYNOPSES[name]:<22}{_command(name).SUMMARY}")
    lines += ["", "options:"]
    # C-2: init's options are listed here too.
    lines += [
        "  --name <name>         Worker name (init)",
        "  --format <format>     jsonc or toml (init; default jsonc)",
        "  --force               overwrite existing files (init)",
        "  --provision           create the queue and database with wrangler (init)",
        "  --help                show this help",
        "  --version             show the version",
        "",
    ]
    return "\n".join(lines)


def version() -> str:
    try:
        return metadata.version("tsumugi")
    except metadata.PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        if sys.stdin.isatty() and sys.stdout.isatty():  # C-6: a person at a terminal gets the menu
            from tsumugi.cli.interactive import run_interactive

            return run_interactive()
        sys.stderr.write(usage())
        return 1
    if "--help" in args or "-h" in args:  # C-1: --help wins over --version, both over commands
        sys.stdout.write(usage())
        named, _ = _split_command(args)
        if named is not None and named in COMMANDS:
            sys.stdout.write("\n" + _parser(named).format_help())
        return 0
    if "--version" in args:
        print(version())
        return 0
    name, rest = _split_command(args)
    try:
        if name is None:
            # C-3: options alone are still parsed strictly, then "no command" is the usage, exit 1.
            _global_parser().parse_args(rest)
            sys.stderr.write(usage())
            return 1
        if name not in COMMANDS:
            sys.stderr.write(f'tsumugi: unknown command "{name}"\n{usage()}')
            return 1
        exit_code: int = _command(name).run(_parser(name).parse_args(_dashes_as_values(rest)))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # C-6: unexpected failures are one line, exit 1
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    return exit_code


def _split_command(args: list[str]) -> tuple[str | None, list[str]]:
    """The command (the first argument that is not an option) and the other arguments, in order.

    Options may come before the command, as with the original's single parse of the whole line (C-1).
    """
    index = 0
    while index < len(args):
        token = args[index]
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            return token, args[:index] + args[index + 1 :]
        index += 2 if token in _GLOBAL_VALUE_OPTIONS else 1
    return None, args


def _dashes_as_values(args: list[str]) -> list[str]:
    """A token of dashes only (``---``) names no option: it is a value, so C-13 can reject it as a name."""
    dashes = [token for token in args if len(token) > 2 and set(token) == {"-"}]
    if not dashes or "--" in args:
        return args
    return [token for token in args if token not in dashes] + ["--", *dashes]


def _global_parser() -> _Parser:
    parser = _Parser(prog="tsumugi", add_help=False, allow_abbrev=False)
    parser.add_argument("--name")
    parser.add_argument("--format")
    return parser


def _parser(name: str) -> _Parser:
    command = _command(name)
    # C-3: strict parsing; no abbreviated options (`--form` is not `--format`).
    parser = _Parser(prog=f"tsumugi {name}", description=command.SUMMARY, add_help=False, allow_abbrev=False)
    command.add_arguments(parser)
    return parser


def _command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


if __name__ == "__main__":
    sys.exit(main())
