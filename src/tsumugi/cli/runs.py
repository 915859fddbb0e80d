"""``tsumugi runs list|show|cancel|resume|event``: flow runs through the REST API."""

from __future__ import annotations

import argparse
import sys

from tsumugi.cli import operator_views, option_types
from tsumugi.cli.command_group import Subcommand
from tsumugi.cli.mutation_report import report_mutation
from tsumugi.cli.option_types import non_negative, one_of, positive
from tsumugi.cli.server_connection import (
    ExitCode,
    OperatorError,
    Server,
    add_server_options,
    call_server,
)
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import RestApiError, TsumugiClient

SUMMARY = "list, show, cancel or resume flow runs, or send one an event (REST API)"
STATES = ("RUNNING", "COMPLETED", "FAILED", "CANCELLED")  # A-59's documented run states
DEFAULT_LIMIT = 20  # A-29's default page


def _add_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", type=one_of(STATES), help="only runs in this state")
    parser.add_argument("--flow", help="only runs of this flow")
    parser.add_argument(
        "--limit",
        type=positive,
        default=DEFAULT_LIMIT,
        help=f"at most this many, up to 100 (default {DEFAULT_LIMIT})",
    )
    parser.add_argument("--offset", type=non_negative, default=0, help="skip this many first")
    add_server_options(parser)


def _list(args: argparse.Namespace) -> int:
    def show(client: TsumugiClient, server: Server) -> int:
        answer = client.list_runs(state=args.state, flow=args.flow, limit=args.limit, offset=args.offset)
        sys.stdout.write(json_text(answer) if server.as_json else operator_views.run_list(answer))
        return ExitCode.OK

    return call_server(args, show)


def _add_one(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="ID", help="the run id, FLOW:ID")
    add_server_options(parser)


def _show(args: argparse.Namespace) -> int:
    def show(client: TsumugiClient, server: Server) -> int:
        try:
            answer = client.get_run(args.run_id)
        except RestApiError as error:
            if error.status != 404 or error.message != "not found":
                raise
            raise OperatorError(f"no run {args.run_id}", ExitCode.REFUSED) from None
        sys.stdout.write(json_text(answer) if server.as_json else operator_views.run_detail(answer))
        return ExitCode.OK

    return call_server(args, show)


def _cancel(args: argparse.Namespace) -> int:
    def cancel(client: TsumugiClient, server: Server) -> int:
        return report_mutation(client.cancel_run(args.run_id), f"run {args.run_id}", "cancelled", server)

    return call_server(args, cancel)


def _resume(args: argparse.Namespace) -> int:
    def resume(client: TsumugiClient, server: Server) -> int:
        # the run's retry; completed nodes keep their results, the others run again.
        return report_mutation(client.retry_run(args.run_id), f"run {args.run_id}", "resumed", server)

    return call_server(args, resume)


def _add_event(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="ID", help="the run id, FLOW:ID")
    parser.add_argument("event", metavar="EVENT", help="the event's name, as the flow's wait names it")
    parser.add_argument(
        "payload",
        metavar="PAYLOAD",
        nargs="?",
        help="JSON text, or - for stdin; it becomes the waiting node's result (default: null)",
    )
    add_server_options(parser)


def _event(args: argparse.Namespace) -> int:
    try:
        payload = None if args.payload is None else option_types.payload(args.payload)
    except ValueError as error:
        sys.stderr.write(f"tsumugi: {error}\n")
        return ExitCode.USAGE

    def send(client: TsumugiClient, server: Server) -> int:
        try:
            answer = client.send_event(args.run_id, args.event, payload)
        except RestApiError as error:
            if error.status != 404 or error.message != "not found":
                raise
            raise OperatorError(f"no run {args.run_id}", ExitCode.REFUSED) from None
        accepted = answer.get("accepted") is True
        if server.as_json:
            sys.stdout.write(json_text(dict(answer)))
        elif not accepted:
            raise OperatorError(f"event {args.event} was refused: {answer.get('error')}", ExitCode.REFUSED)
        elif answer.get("state") == "COMPLETED":
            sys.stdout.write(f"node {answer.get('node')} took event {args.event}\n")
        else:
            sys.stdout.write(f"event {args.event} is kept until node {answer.get('node')} waits for it\n")
        return ExitCode.OK if accepted else ExitCode.REFUSED

    return call_server(args, send)


SUBCOMMANDS: dict[str, Subcommand] = {
    "list": Subcommand("runs, newest change first", "list [filters]", _add_list, _list),
    "show": Subcommand("one run: fields, input, nodes", "show ID", _add_one, _show),
    "cancel": Subcommand(
        "cancel a RUNNING run (nodes not started are stopped; running jobs finish)",
        "cancel ID",
        _add_one,
        _cancel,
    ),
    "resume": Subcommand(
        "resume a FAILED run: completed nodes keep their results, the others run again",
        "resume ID",
        _add_one,
        _resume,
    ),
    "event": Subcommand(
        "send a run an event: the node that waits for it completes with the payload as its result",
        "event ID EVENT [PAYLOAD]",
        _add_event,
        _event,
    ),
}
