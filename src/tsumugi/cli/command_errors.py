"""How ``init``, ``add-performer`` and ``doctor`` end on an error: ``tsumugi: <message>``, exit 1."""
# C-6

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from tsumugi.errors import CommandLineError

ONLY_WITH_INIT = "--name and --format are only valid with init"  # C-5


def run_guarded(body: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command body; a ``CommandLineError`` or any unexpected exception prints one line, exit 1."""
    try:
        return body(args)
    except Exception as exc:  # CommandLineError, and C-6: any unexpected failure is one line, no traceback
        sys.stderr.write(f"tsumugi: {exc}\n")
    return 1


def add_init_only_options(parser: argparse.ArgumentParser) -> None:
    """Accept ``--name``/``--format`` so that using them outside init gets init's usage message."""
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--format", dest="config_format", help=argparse.SUPPRESS)


def reject_init_only_options(args: argparse.Namespace) -> None:
    if args.name is not None or args.config_format is not None:
        raise CommandLineError(ONLY_WITH_INIT)
