"""The ``tsumugi`` command: dispatches to one module per command (``tsumugi.cli.<name>``).

A command module defines ``SUMMARY`` (one line for the usage text), and either ``add_arguments(parser)``
and ``run(args) -> int`` (the exit code), or ``SUBCOMMANDS`` (``tsumugi jobs list``: a name per
``Subcommand``). Register it in ``COMMANDS``. The whole line is parsed once, strictly (ADR-0125, ADR-0138).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from types import ModuleType
from typing import NoReturn

from tsumugi.cli.command_group import Subcommand, group_help

COMMANDS: dict[str, str] = {
    "init": "tsumugi.cli.init",
    "add-performer": "tsumugi.cli.add_performer",
    "doctor": "tsumugi.cli.doctor",
    "dev": "tsumugi.cli.dev",
    "jobs": "tsumugi.cli.jobs",
    "runs": "tsumugi.cli.runs",
    "enqueue": "tsumugi.cli.enqueue",
    "stats": "tsumugi.cli.stats",
}
# How each command is called, for the usage text (C-2).
_SYNOPSES: dict[str, str] = {
    "init": "init [DIR]",
    "add-performer": "add-performer <NAME>",
    "doctor": "doctor [DIR]",
    "dev": "dev [APP]",
    "jobs": "jobs <subcommand>",
    "runs": "runs <subcommand>",
    "enqueue": "enqueue <BINDING> <PAYLOAD>",
    "stats": "stats",
}
# The options that take a value when they come before the command (C-1: `tsumugi --name w init`).
_GLOBAL_VALUE_OPTIONS = ("--name", "--format", "--url", "--token")


class _Parser(argparse.ArgumentParser):
    """Parse errors print ``tsumugi: <message>`` and the usage on stderr, exit 1."""

    # C-3

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"tsumugi: {message}\n{usage()}")
        raise SystemExit(1)


def usage() -> str:
    lines = ["usage: tsumugi <command> [options]", "", "commands:"]
    width = max(len(synopsis) for synopsis in _SYNOPSES.values()) + 2
    for name in COMMANDS:
        lines.append(f"  {_SYNOPSES[name]:<{width}}{_command(name).SUMMARY}")
    lines += ["", "options:"]
    # C-2: init's options are listed here too.
    lines += [
        "  --name <name>         Worker name (init)",
        "  --format <format>     jsonc or toml (init; default jsonc)",
        "  --force               overwrite existing files (init)",
        "  --provision           create the queue and database with wrangler (init)",
        "  --url <url>           the server (jobs, runs, enqueue, stats; default $TSUMUGI_URL,",
        "                        else http://127.0.0.1:8787)",
        "  --token <token>       its bearer token (default $TSUMUGI_TOKEN, else .dev.vars)",
        "  --json                print JSON instead of tables (jobs, runs, enqueue, stats)",
        "  --help                show this help; `tsumugi <command> --help` adds the command's options",
        "  --version             show the version",
        "",
        "exit codes of jobs, runs, enqueue and stats:",
        "  0 done, 1 command-line error, 2 server unreachable, 3 token missing or refused,",
        "  4 request refused (unknown id, wrong state, invalid input; or some jobs of a bulk change),",
        "  5 server error or operation not offered",
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
        named, rest = _split_command(args)
        if named is not None and named in COMMANDS:
            sys.stdout.write("\n" + _command_help(named, rest))
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
        exit_code = _run(name, rest)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # C-6: unexpected failures are one line, exit 1
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    return exit_code


def _run(name: str, rest: list[str]) -> int:
    """Parse the rest of the line for ``name`` (and its subcommand, the next non-option) and run it."""
    subcommands: dict[str, Subcommand] | None = getattr(_command(name), "SUBCOMMANDS", None)
    if subcommands is None:
        exit_code: int = _command(name).run(_parser(name).parse_args(_dashes_as_values(rest)))
        return exit_code
    sub, rest = _split_command(rest)  # options may come before the subcommand too
    if sub is None:
        sys.stderr.write(f"tsumugi: {name} needs a subcommand: {', '.join(subcommands)}\n{usage()}")
        return 1
    if sub not in subcommands:
        sys.stderr.write(f'tsumugi: unknown command "{name} {sub}"\n{usage()}')
        return 1
    return subcommands[sub].run(_parser(name, sub).parse_args(_dashes_as_values(rest)))


def _split_command(args: list[str]) -> tuple[str | None, list[str]]:
    """The command (the first argument that is not an option) and the other arguments, in order.

    Options may come before the command, as with the original's single parse of the whole line.
    """
    # C-1
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
    """A token of dashes only (``---``) names no option: it is a value, which a command may reject."""
    dashes = [token for token in args if len(token) > 2 and set(token) == {"-"}]
    if not dashes or "--" in args:
        return args
    return [token for token in args if token not in dashes] + ["--", *dashes]


def _global_parser() -> _Parser:
    parser = _Parser(prog="tsumugi", add_help=False, allow_abbrev=False)
    parser.add_argument("--name")
    parser.add_argument("--format")
    parser.add_argument("--url")
    parser.add_argument("--token")
    parser.add_argument("--json", action="store_true")
    return parser


def _parser(name: str, sub: str | None = None) -> _Parser:
    command = _command(name)
    if sub is None:
        summary: str = command.SUMMARY
        add_arguments: Callable[[argparse.ArgumentParser], None] = command.add_arguments
    else:
        subcommand: Subcommand = command.SUBCOMMANDS[sub]
        summary, add_arguments = subcommand.summary, subcommand.add_arguments
    # C-3: strict parsing; no abbreviated options (`--form` is not `--format`).
    prog = f"tsumugi {name}" if sub is None else f"tsumugi {name} {sub}"
    parser = _Parser(prog=prog, description=summary, add_help=False, allow_abbrev=False)
    add_arguments(parser)
    return parser


def _command_help(name: str, rest: list[str]) -> str:
    """The command's own options; for a command with subcommands, the subcommand's, or their list."""
    subcommands: dict[str, Subcommand] | None = getattr(_command(name), "SUBCOMMANDS", None)
    if subcommands is None:
        return _parser(name).format_help()
    sub, _ = _split_command(rest)
    return _parser(name, sub).format_help() if sub in subcommands else group_help(name, subcommands)


def _command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


if __name__ == "__main__":
    sys.exit(main())
