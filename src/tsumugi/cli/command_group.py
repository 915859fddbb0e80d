"""A command made of subcommands (``tsumugi jobs list``): what ``main`` needs to parse and run one."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: its usage line, its options, and the body that returns the exit code."""

    summary: str
    synopsis: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def group_help(name: str, subcommands: dict[str, Subcommand]) -> str:
    """The subcommands of ``tsumugi <name>``, one per line, for ``tsumugi <name> --help``."""
    width = max(len(f"{name} {sub.synopsis}") for sub in subcommands.values()) + 2
    lines = [f"usage: tsumugi {name} <subcommand> [options]", "", "subcommands:"]
    lines += [f"  {f'{name} {sub.synopsis}':<{width}}{sub.summary}" for sub in subcommands.values()]
    return "\n".join(lines) + "\n"
