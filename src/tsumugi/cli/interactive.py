"""Interactive mode: a menu, then init or add-performer driven by prompts.

``tsumugi`` without arguments on a terminal (stdin and stdout are TTYs) enters here. Every answer
is checked and confirmed before anything runs; cancelling (end of input, Ctrl-C) or an empty answer
where one is needed writes nothing and exits 1.
"""
# C-20, C-6

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from tsumugi.cli import add_performer, init
from tsumugi.cli.project_config import default_worker_name, find_config
from tsumugi.cli.project_names import check_worker_name, performer_names
from tsumugi.cli.scaffold_templates import PERFORMERS_DIR
from tsumugi.errors import CommandLineError

Ask = Callable[[str], str]
CANCELED = "canceled, nothing was written"
_MENU = {"1": "init", "init": "init", "2": "add-performer", "add-performer": "add-performer"}
_EXIT = {"3", "exit", "q", "quit"}


class _Canceled(Exception):
    """The user cancelled or left a required answer empty."""


def _answer(ask: Ask, prompt: str) -> str:
    try:
        return ask(prompt).strip()
    except (EOFError, KeyboardInterrupt) as exc:
        raise _Canceled from exc


def _confirm(ask: Ask, question: str) -> None:
    if _answer(ask, f"{question} [y/N] ").lower() not in ("y", "yes"):
        raise _Canceled


def run_interactive(ask: Ask = input, root: Path = Path(".")) -> int:
    """The menu "what do you want to do?": init, add-performer or exit (exit 0)."""
    print("what do you want to do?\n  1. init\n  2. add-performer\n  3. exit")
    while True:
        try:
            choice = _answer(ask, "> ").lower()
        except _Canceled:
            return 0  # C-20: cancelling the menu is a normal exit
        if choice in _EXIT:
            return 0
        if choice in _MENU:
            break
        print("answer 1, 2 or 3")
    try:
        return _interactive_init(ask, root) if _MENU[choice] == "init" else _interactive_add(ask, root)
    except _Canceled:
        print(CANCELED)
        return 1
    except CommandLineError as exc:
        sys.stderr.write(f"tsumugi: {exc}\n")
        return 1


def _interactive_init(ask: Ask, root: Path) -> int:
    default = default_worker_name(root)
    name = check_worker_name(_answer(ask, f"worker name? ({default}) ") or default)
    existing = find_config(root)
    if existing is None:
        config_format = _answer(ask, "configuration format, jsonc or toml? (jsonc) ").lower() or "jsonc"
        if config_format not in init.FORMATS:
            raise CommandLineError(f'unknown format "{config_format}", use jsonc or toml')
        config_line = f"write wrangler.{config_format}"
    else:
        config_format = existing.config_format
        config_line = f"leave {existing.path.name} unchanged and print the fragment to append"
    # C-20: the confirmation names what will happen, before any file or wrangler call.
    _confirm(
        ask,
        f"create a Python Worker named {name} in {root}: {config_line}, pyproject.toml, src/app.py, "
        f"src/entry.py, {PERFORMERS_DIR}/, .dev.vars, .dev.vars.example and .gitignore"
        " (existing files are kept)?",
    )
    args = argparse.Namespace(
        directory=[str(root)], name=name, config_format=config_format, force=False, provision=False
    )
    return init.run(args)


def _interactive_add(ask: Ask, root: Path) -> int:
    raw = _answer(ask, "performer name? (e.g. send-mail) ")
    if not raw:
        raise _Canceled
    names = performer_names(raw)  # C-20: validated before the confirmation
    _confirm(ask, f"create {PERFORMERS_DIR}/{names.module}.py with class {names.class_name}?")
    args = argparse.Namespace(names=[raw], dir=str(root), name=None, config_format=None)
    return add_performer.run(args)
