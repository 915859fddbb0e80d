"""``tsumugi jobs retry|cancel|reschedule --all-matching``: every job a filter matches (POST /api/bulk).

The server counts first (a dry run), the command says the count and asks before it acts unless
``--yes``; then it polls the action's progress, drawing the bar, until the action is done (ADR-0151).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from tsumugi.cli.bulk_pages import Progress
from tsumugi.cli.server_connection import ExitCode, OperatorError, Server
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import TsumugiClient

PROGRESSIVE: Final = {"retry": "retrying", "cancel": "cancelling", "reschedule": "rescheduling"}
POLL_WAIT_S: Final = 0.2  # every poll also runs a batch when no one else is, so polls need not wait long


def add_arguments(parser: argparse.ArgumentParser, *, cancel: bool) -> None:
    parser.add_argument(
        "--all-matching",
        action="store_true",
        help="act on every job the filter matches, in batches on the server, not only the first 200",
    )
    parser.add_argument("--cap", type=int, metavar="N", help="with --all-matching: act on at most N jobs")
    parser.add_argument("--dry-run", action="store_true", help="with --all-matching: only count the jobs")
    parser.add_argument("--yes", action="store_true", help="with --all-matching: do not ask before acting")
    if cancel:
        parser.add_argument(
            "--include-running",
            action="store_true",
            help="with --all-matching: also ask running jobs to stop",
        )


def run(
    client: TsumugiClient,
    server: Server,
    args: argparse.Namespace,
    verb: str,
    filters: Mapping[str, object],
    ask: Callable[[str], str] = input,
    sleep: Callable[[float], None] = time.sleep,
    *,
    options: Mapping[str, object] | None = None,
) -> int:
    """Count, ask, act and follow; ``options`` are the action's own fields (a reschedule's time)."""
    body: dict[str, Any] = {"action": verb, "filter": dict(filters), **(options or {})}
    if args.cap is not None:
        body["cap"] = args.cap
    if getattr(args, "include_running", False):
        body["includeRunning"] = True
    matched = int(client.start_bulk(**body, dryRun=True)["matched"])
    if args.dry_run or matched == 0:
        sys.stdout.write(json_text({"matched": matched}) if server.as_json else f"{matched} jobs match\n")
        return ExitCode.OK
    if not args.yes:
        if not sys.stdin.isatty():
            raise OperatorError(f"{matched} jobs match: add --yes to {verb} them", ExitCode.USAGE)
        if ask(f"{verb} {matched} jobs? [y/N] ").strip().lower() not in ("y", "yes"):
            sys.stdout.write("nothing done\n")
            return ExitCode.OK
    progress = Progress(sys.stderr, PROGRESSIVE.get(verb, verb))
    state = client.start_bulk(**body)
    while state["state"] != "done":
        progress.update(int(state["done"]) + int(state["failed"]), int(state["matched"]))
        sleep(POLL_WAIT_S)
        state = client.bulk_progress(str(state["id"]))
    progress.update(int(state["done"]) + int(state["failed"]), int(state["matched"]))
    progress.finish()
    if server.as_json:
        sys.stdout.write(json_text(state))
    else:
        sys.stdout.write(f"{verb}: {state['done']} of {state['matched']} jobs, {state['failed']} refused\n")
    return ExitCode.REFUSED if state["failed"] else ExitCode.OK
