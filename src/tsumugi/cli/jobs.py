"""``tsumugi jobs list|show|retry|cancel|reschedule``: jobs through the REST API."""

from __future__ import annotations

import argparse
import sys

from tsumugi.api import models
from tsumugi.cli import bulk_all, job_changes, operator_views
from tsumugi.cli.command_group import Subcommand
from tsumugi.cli.mutation_report import report_mutation
from tsumugi.cli.option_types import epoch_ms, non_negative, one_of, positive
from tsumugi.cli.server_connection import (
    ExitCode,
    OperatorError,
    Server,
    add_server_options,
    call_server,
)
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import RestApiError, TsumugiClient

SUMMARY = "list, show, retry, cancel or reschedule jobs (REST API)"
STATES = ("SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED")
SORTS = ("updated_at", "created_at", "binding", "state", "priority", "attempts")  # A-28's allow-list
PAGE_LIMIT = 100  # the API answers at most 100 jobs a page
DEFAULT_LIMIT = 20  # A-29's default page


def _add_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", type=one_of(STATES), help="only jobs in this state")
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
    parser.add_argument("--sort", choices=SORTS, default="updated_at", help="order by (default updated_at)")
    parser.add_argument("--asc", action="store_true", help="ascending (default descending)")
    parser.add_argument(
        "--limit", type=positive, default=DEFAULT_LIMIT, help=f"at most this many (default {DEFAULT_LIMIT})"
    )
    parser.add_argument("--offset", type=non_negative, default=0, help="skip this many first")
    add_server_options(parser)


def _list(args: argparse.Namespace) -> int:
    return call_server(args, lambda client, server: _print_list(client, server, args))


def _print_list(client: TsumugiClient, server: Server, args: argparse.Namespace) -> int:
    query = {
        "state": args.state,
        "binding": args.binding,
        "unique_key": args.unique_key,
        "concurrency_key": args.concurrency_key,
        "created_from": args.created_from,
        "created_to": args.created_to,
        "sort": args.sort,
        "order": "asc" if args.asc else "desc",
    }
    jobs: list[models.JobSummary] = []
    total = 0
    while len(jobs) < args.limit:  # more than one page: walk the offsets, as the dashboard pages
        want = min(PAGE_LIMIT, args.limit - len(jobs))
        page = client.list_jobs(**query, limit=want, offset=args.offset + len(jobs))
        jobs += page.jobs
        total = page.total
        if len(page.jobs) < want:
            break
    answer = models.JobList(jobs=jobs, total=total)
    sys.stdout.write(json_text(answer) if server.as_json else operator_views.job_list(answer))
    return ExitCode.OK


def _add_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", metavar="ID")
    add_server_options(parser)


def _show(args: argparse.Namespace) -> int:
    def show(client: TsumugiClient, server: Server) -> int:
        try:
            job = client.get_job(args.job_id)
        except RestApiError as error:
            if error.status != 404 or error.message != "not found":
                raise
            # a new job reaches the read model about a second after it was enqueued.
            missing = f"no job {args.job_id} (a new job shows within a second or two)"
            raise OperatorError(missing, ExitCode.REFUSED) from None
        answer = models.JobDetailResponse(job=job)
        sys.stdout.write(json_text(answer) if server.as_json else operator_views.job_detail(job))
        return ExitCode.OK

    return call_server(args, show)


def _add_reschedule(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", metavar="ID", nargs="?", help="the job to reschedule")
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--delay-ms", type=non_negative, help="run this many milliseconds from now")
    when.add_argument("--run-at", type=epoch_ms, metavar="WHEN", help="run at WHEN (epoch ms or ISO 8601)")
    parser.add_argument("--priority", type=int, help="the new priority")
    job_changes.add_filter_arguments(parser)
    bulk_all.add_arguments(parser, cancel=False)
    add_server_options(parser)


def _reschedule(args: argparse.Namespace) -> int:
    def reschedule(client: TsumugiClient, server: Server) -> int:
        filters = job_changes.filters_of(args)
        if args.all_matching:  # ADR-0151: every SCHEDULED job the filter matches, in batches on the server
            if args.job_id is not None:
                raise OperatorError("--all-matching takes a filter, not a job id", ExitCode.USAGE)
            when: dict[str, object] = (
                {"runAt": args.run_at} if args.run_at is not None else {"delayMs": args.delay_ms}
            )
            if args.priority is not None:
                when["priority"] = args.priority
            return bulk_all.run(client, server, args, "reschedule", filters, options=when)
        if filters:
            raise OperatorError("a filter needs --all-matching; otherwise give one id", ExitCode.USAGE)
        if args.job_id is None:
            raise OperatorError("name the job, or give --all-matching and a filter", ExitCode.USAGE)
        answer = client.reschedule_job(
            args.job_id, run_at=args.run_at, delay_ms=args.delay_ms, priority=args.priority
        )
        return report_mutation(answer, f"job {args.job_id}", "rescheduled", server)

    return call_server(args, reschedule)


SUBCOMMANDS: dict[str, Subcommand] = {
    "list": Subcommand("jobs in the read model, newest change first", "list [filters]", _add_list, _list),
    "show": Subcommand("one job: fields, payload, result, attempts", "show ID", _add_show, _show),
    "retry": Subcommand(
        "retry FAILED or STALLED jobs, by id or by filter",
        "retry [ID...] [filters]",
        job_changes.add_retry_arguments,
        job_changes.retry,
    ),
    "cancel": Subcommand(
        "cancel jobs by id, or SCHEDULED ones by filter; a running job is asked to stop",
        "cancel [ID...] [filters]",
        job_changes.add_cancel_arguments,
        job_changes.cancel,
    ),
    "reschedule": Subcommand(
        "move a SCHEDULED job's run time and priority, or every one a filter matches",
        "reschedule [ID] [filters] --delay-ms N | --run-at WHEN",
        _add_reschedule,
        _reschedule,
    ),
}
