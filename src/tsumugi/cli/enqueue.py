"""``tsumugi enqueue BINDING PAYLOAD``: one job through ``POST /api/jobs``; prints its id."""
# A-38..A-40

from __future__ import annotations

import argparse
import sys

from tsumugi.cli import option_types
from tsumugi.cli.option_types import non_negative, positive
from tsumugi.cli.server_connection import ExitCode, OperatorError, Server, add_server_options, call_server
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import TsumugiClient

SUMMARY = "enqueue a job (REST API); PAYLOAD is JSON, or - to read it from stdin"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("binding", metavar="BINDING", help="the performer's binding")
    parser.add_argument("payload", metavar="PAYLOAD", help="the payload as JSON text, or - for stdin")
    parser.add_argument("--max-attempts", type=positive, help="attempts before the job FAILS")
    parser.add_argument("--delay-ms", type=non_negative, help="wait this long before the first attempt")
    parser.add_argument("--priority", type=int, help="higher runs first")
    parser.add_argument(
        "--unique-key", metavar="KEY", help="one live job per key (a second enqueue gets its id)"
    )
    parser.add_argument(
        "--concurrency-key", metavar="KEY", help="the key per-key concurrency limits count by"
    )
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    try:
        payload = option_types.payload(args.payload)
    except ValueError as error:
        sys.stderr.write(f"tsumugi: {error}\n")
        return ExitCode.USAGE
    return call_server(args, lambda client, server: _enqueue(client, server, args, payload))


def _enqueue(client: TsumugiClient, server: Server, args: argparse.Namespace, payload: object) -> int:
    if not args.binding:
        raise OperatorError("BINDING must not be empty", ExitCode.USAGE)
    job_id = client.create_job(
        args.binding,
        payload,
        max_attempts=args.max_attempts,
        delay_ms=args.delay_ms,
        priority=args.priority,
        concurrency_key=args.concurrency_key,
        unique_key=args.unique_key,
    )
    sys.stdout.write(json_text({"id": job_id}) if server.as_json else job_id + "\n")
    return ExitCode.OK
