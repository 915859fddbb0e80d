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
    "dev": "tsumugi.cli.dev",
    "init": "tsumugi.cli.init",
    "add-performer": "tsumugi.cli.add_performer",
    "doctor": "tsumugi.cli.doctor",
}


class _Parser(argparse.ArgumentParser):
    """Parse errors print ``tsumugi: <message>`` and the usage on stderr, exit 1 (C-3)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"tsumugi: {message}\n{usage()}")
        raise SystemExit(1)


def usage() -> str:
    lines = ["usage: tsumugi <command> [options]", "", "commands:"]
    for name in COMMANDS:
        lines.append(f"  {name:<16}{_command(name).SUMMARY}")
    lines += ["", "options:"]
    # C-2: init's options are listed here too.
    lines += ["  --name <name>   Worker name (init)", "  --format <fmt>  jsonc or toml (init; default jsonc)"]
    lines += ["  --help          show this help", "  --version       show the version", ""]
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
        if args[0] in COMMANDS:
            sys.stdout.write("\n" + _parser(args[0]).format_help())
        return 0
    if "--version" in args:
        print(version())
        return 0
    name = args[0]
    if name not in COMMANDS:
        sys.stderr.write(f'tsumugi: unknown command "{name}"\n{usage()}')
        return 1
    parser = _parser(name)
    try:
        exit_code: int = _command(name).run(parser.parse_args(args[1:]))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # C-6: unexpected failures are one line, exit 1
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    return exit_code


def _parser(name: str) -> _Parser:
    command = _command(name)
    parser = _Parser(prog=f"tsumugi {name}", description=command.SUMMARY, add_help=False)
    command.add_arguments(parser)
    return parser


def _command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


if __name__ == "__main__":
    sys.exit(main())
