"""``tsumugi jobs retry`` and ``tsumugi jobs cancel``: one job, many ids, or every job a filter selects."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tsumugi.api import models
from tsumugi.cli import bulk_all, bulk_pages
from tsumugi.cli.mutation_report import REASONS, report_mutation
from tsumugi.cli.option_types import epoch_ms, one_of
from tsumugi.cli.server_connection import ExitCode, OperatorError, Server, add_server_options, call_server
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import TsumugiClient
from tsumugi.rest_requests import BulkSelection

# the states each bulk action accepts.
RETRY_STATES = ("FAILED", "STALLED")
CANCEL_STATES = ("SCHEDULED",)


@dataclass(frozen=True)
class _Action:
    verb: str
    past: str
    progressive: str
    one: Callable[[TsumugiClient, str], Mapping[str, object]]
    bulk: Callable[[TsumugiClient, BulkSelection], models.BulkResult]


RETRY = _Action(
    "retry", "retried", "retrying", TsumugiClient.retry_job, lambda client, body: client.bulk_retry(**body)
)
CANCEL = _Action(
    "cancel",
    "cancelled",
    "cancelling",
    TsumugiClient.cancel_job,
    lambda client, body: client.bulk_cancel(**body),
)


def add_retry_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser, RETRY, RETRY_STATES)


def add_cancel_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser, CANCEL, CANCEL_STATES)


def retry(args: argparse.Namespace) -> int:
    return call_server(args, lambda client, server: _change(client, server, args, RETRY))


def cancel(args: argparse.Namespace) -> int:
    return call_server(args, lambda client, server: _change(client, server, args, CANCEL))


def _add_arguments(parser: argparse.ArgumentParser, action: _Action, states: Sequence[str]) -> None:
    parser.add_argument("job_ids", nargs="*", metavar="ID", help=f"the jobs to {action.verb}")
    accepted = " or ".join(states)
    parser.add_argument("--state", type=one_of(states), help=f"only jobs in this state ({accepted})")
    add_filter_arguments(parser)
    parser.add_argument("--all", action="store_true", help=f"every {accepted} job, with no filter")
    bulk_all.add_arguments(parser, cancel=action is CANCEL)
    add_server_options(parser)


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """The list filters every bulk action takes, but the state (each action names its own)."""
    parser.add_argument("--binding", help="only this performer's jobs")
    parser.add_argument("--unique-key", metavar="KEY", help="only jobs with this unique key")
    parser.add_argument("--concurrency-key", metavar="KEY", help="only jobs with this concurrency key")
    parser.add_argument(
        "--created-from",
        type=epoch_ms,
        metavar="WHEN",
        help="created at or after WHEN (epoch ms or ISO 8601)",
    )
    parser.add_argument("--created-to", type=epoch_ms, metavar="WHEN", help="created at or before WHEN")


# the list filters a bulk action takes
def filters_of(args: argparse.Namespace) -> BulkSelection:
    """The filters given on the command line, by their REST names."""
    selection: BulkSelection = {}
    if getattr(args, "state", None) is not None:  # a reschedule takes no state: it moves SCHEDULED jobs
        selection["state"] = args.state
    if args.binding is not None:
        selection["binding"] = args.binding
    if args.unique_key is not None:
        selection["unique_key"] = args.unique_key
    if args.concurrency_key is not None:
        selection["concurrency_key"] = args.concurrency_key
    if args.created_from is not None:
        selection["created_from"] = args.created_from
    if args.created_to is not None:
        selection["created_to"] = args.created_to
    return selection


def _change(client: TsumugiClient, server: Server, args: argparse.Namespace, action: _Action) -> int:
    filters = filters_of(args)
    if args.job_ids and (filters or args.all):
        raise OperatorError("give job ids or a filter, not both", ExitCode.USAGE)
    if not args.job_ids and not filters and not args.all and not args.all_matching:
        raise OperatorError(
            f"name the jobs to {action.verb}: ids, a filter (--state, --binding, ...) or --all",
            ExitCode.USAGE,
        )
    if args.all_matching:  # ADR-0151: the server walks the whole filter
        if args.job_ids:
            raise OperatorError("--all-matching takes a filter, not job ids", ExitCode.USAGE)
        return bulk_all.run(client, server, args, action.verb, filters)
    if len(args.job_ids) == 1:
        job_id = args.job_ids[0]
        return report_mutation(action.one(client, job_id), f"job {job_id}", action.past, server)
    progress = bulk_pages.Progress(sys.stderr, action.progressive)

    def send(body: BulkSelection) -> models.BulkResult:
        return action.bulk(client, body)

    if args.job_ids:
        outcome = bulk_pages.by_ids(send, args.job_ids, progress)
    else:
        outcome = bulk_pages.by_filter(send, filters, progress)
    sys.stdout.write(json_text(outcome.as_wire()) if server.as_json else bulk_summary(outcome, action.past))
    return ExitCode.REFUSED if outcome.failed or outcome.left else ExitCode.OK


def bulk_summary(outcome: bulk_pages.BulkOutcome, past: str) -> str:
    """``retried 12 jobs``, then each refused job with its reason, then what a lagging read model left."""
    count = len(outcome.ok)
    text = f"{past} {count} job{'' if count == 1 else 's'}\n"
    if outcome.failed:
        text += f"{len(outcome.failed)} not {past}:\n"
        text += "".join(f"  {failure.id}: {REASONS[failure.reason]}\n" for failure in outcome.failed)
    if outcome.left:
        text += (
            f"stopped with {outcome.left} still listed: the read model has not caught up "
            "(it lags by a second or so); run the command again\n"
        )
    return text
