"""``tsumugi enqueue BINDING PAYLOAD``: one job through ``POST /api/jobs``; prints its id."""
# A-38..A-40

from __future__ import annotations

import argparse
import sys

from tsumugi.api import models
from tsumugi.cli import option_types
from tsumugi.cli.option_types import non_negative, positive
from tsumugi.cli.server_connection import ExitCode, OperatorError, Server, add_server_options, call_server
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import TsumugiClient
from tsumugi.rest_requests import ThrottleSpec

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
    debounce = parser.add_argument_group("debounce (a waiting job with the key takes the payload)")
    debounce.add_argument("--debounce-key", metavar="KEY", help="the key enqueues are debounced by")
    debounce.add_argument("--debounce-ms", type=positive, help="run this long after the last enqueue")
    debounce.add_argument("--debounce-max-ms", type=positive, help="and at most this long after the first")
    throttle = parser.add_argument_group("throttle (at most TOKENS jobs per INTERVAL for the key)")
    throttle.add_argument("--throttle-key", metavar="KEY", help="the key the throttle counts by")
    throttle.add_argument("--throttle-tokens", type=positive, metavar="TOKENS", help="jobs per interval")
    throttle.add_argument("--throttle-interval-ms", type=positive, metavar="INTERVAL", help="the interval")
    throttle.add_argument(
        "--throttle-on-excess",
        choices=("delay", "drop"),
        default="delay",
        help="a job over the limit waits for the next free slot (delay, the default) or is not made",
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
    if (args.debounce_key is None) != (args.debounce_ms is None):
        raise OperatorError("--debounce-key and --debounce-ms go together", ExitCode.USAGE)
    throttled = (args.throttle_key, args.throttle_tokens, args.throttle_interval_ms)
    if any(value is not None for value in throttled) and None in throttled:
        raise OperatorError(
            "--throttle-key, --throttle-tokens and --throttle-interval-ms go together", ExitCode.USAGE
        )
    common = {
        "max_attempts": args.max_attempts,
        "delay_ms": args.delay_ms,
        "priority": args.priority,
        "concurrency_key": args.concurrency_key,
        "unique_key": args.unique_key,
    }
    if args.debounce_key is None and args.throttle_key is None:
        job_id = client.create_job(args.binding, payload, **common)
        sys.stdout.write(json_text({"id": job_id}) if server.as_json else job_id + "\n")
        return ExitCode.OK
    throttle: ThrottleSpec | None = None
    if args.throttle_key is not None:
        throttle = {
            "tokens": args.throttle_tokens,
            "intervalMs": args.throttle_interval_ms,
            "onExcess": args.throttle_on_excess,
        }
    answer = client.create_job(
        args.binding,
        payload,
        **common,
        debounce_key=args.debounce_key,
        debounce_ms=args.debounce_ms,
        debounce_max_ms=args.debounce_max_ms,
        throttle_key=args.throttle_key,
        throttle=throttle,
    )
    if server.as_json:
        sys.stdout.write(json_text(answer))
    elif isinstance(answer, models.Dropped):
        next_slot = "" if answer.runAfter is None else f"; the key's next free slot is at {answer.runAfter}"
        raise OperatorError(f"the throttle dropped the job: none was made{next_slot}", ExitCode.REFUSED)
    else:
        sys.stdout.write(answer.id + "\n")  # a debounced enqueue answers the waiting job's id
    return ExitCode.REFUSED if isinstance(answer, models.Dropped) else ExitCode.OK
