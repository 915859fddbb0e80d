"""The operator commands on the one strict command line (C-1..C-3, ADR-0125, ADR-0138); no server needed."""

from __future__ import annotations

import pytest
from tests.cli.conftest import Tsumugi

from tsumugi.cli import option_types

USAGE_HEAD = "usage: tsumugi <command> [options]\n"


def test_the_usage_lists_the_operator_commands_and_the_exit_codes(tsumugi: Tsumugi) -> None:
    out = tsumugi("--help").out
    commands = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split()[0] for line in commands.splitlines()][-4:] == ["jobs", "runs", "enqueue", "stats"]
    assert "--url <url>" in out and "--token <token>" in out and "--json" in out
    assert "2 server unreachable, 3 token missing or refused" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("jobs", "--help"), "  jobs reschedule [ID] [filters] --delay-ms N | --run-at WHEN  "),
        (("runs", "-h"), "  runs resume ID  "),
        (("jobs", "list", "--help"), "usage: tsumugi jobs list [--state STATE]"),
        (("--url", "http://h", "jobs", "retry", "--help"), "usage: tsumugi jobs retry"),
        (("enqueue", "--help"), "usage: tsumugi enqueue [--max-attempts MAX_ATTEMPTS]"),
    ],
)
def test_help_of_a_command_and_of_a_subcommand(tsumugi: Tsumugi, argv: tuple[str, ...], needle: str) -> None:
    # C-1: --help wins anywhere; the usage, then what the command (or subcommand) takes
    outcome = tsumugi(*argv)
    assert outcome.code == 0 and outcome.out.startswith(USAGE_HEAD)
    assert needle in outcome.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("jobs",), "jobs needs a subcommand: list, show, retry, cancel, reschedule"),
        (("runs", "--json"), "runs needs a subcommand: list, show, cancel, resume"),
        (("jobs", "frob"), 'unknown command "jobs frob"'),
        (("jobs", "list", "--bogus"), "unrecognized arguments: --bogus"),
        (("jobs", "list", "--stat", "FAILED"), "unrecognized arguments: --stat FAILED"),  # no abbreviations
        (("jobs", "list", "--state", "DONE"), "argument --state: 'DONE' is not one of SCHEDULED, QUEUED"),
        (
            ("jobs", "retry", "--state", "COMPLETED"),
            "argument --state: 'COMPLETED' is not one of FAILED, STALLED",
        ),
        (("jobs", "reschedule", "A#0:x"), "one of the arguments --delay-ms --run-at is required"),
        (
            ("jobs", "reschedule", "A#0:x", "--run-at", "soon"),
            "argument --run-at: 'soon' is neither epoch milliseconds nor",
        ),
        (("enqueue", "Ok"), "the following arguments are required: PAYLOAD"),
        (("enqueue", "Ok", "{}", "--delay-ms", "-5"), "argument --delay-ms: -5 is negative"),
        (("stats", "extra"), "unrecognized arguments: extra"),
    ],
)
def test_parse_errors_are_one_line_and_the_usage(
    tsumugi: Tsumugi, argv: tuple[str, ...], message: str
) -> None:
    # C-3: `tsumugi: <message>` + usage on stderr, exit 1, before any request is sent
    outcome = tsumugi(*argv)
    assert (outcome.code, outcome.out) == (1, "")
    assert outcome.err.startswith(f"tsumugi: {message}") and USAGE_HEAD in outcome.err


@pytest.mark.parametrize("argv", [("--url", "http://h"), ("--json",), ("--token", "t", "--url", "http://h")])
def test_operator_options_alone_are_still_no_command(tsumugi: Tsumugi, argv: tuple[str, ...]) -> None:
    # C-3: valid options with no command -> the usage on stderr, exit 1
    outcome = tsumugi(*argv)
    assert (outcome.code, outcome.out) == (1, "") and outcome.err.startswith(USAGE_HEAD)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("jobs", "retry"),
            "tsumugi: name the jobs to retry: ids, a filter (--state, --binding, ...) or --all\n",
        ),
        (("jobs", "cancel", "A#0:x", "--all"), "tsumugi: give job ids or a filter, not both\n"),
        (("enqueue", "Ok", "{nope"), "tsumugi: PAYLOAD is not JSON: "),
        (("stats", "--url", "localhost:8787"), "tsumugi: the URL must start with http:// or https://"),
    ],
)
def test_what_cannot_be_sent_is_exit_1(tsumugi: Tsumugi, argv: tuple[str, ...], message: str) -> None:
    outcome = tsumugi(*argv, "--url", "http://127.0.0.1:9") if "--url" not in argv else tsumugi(*argv)
    assert outcome.code == 1 and outcome.err.startswith(message)


def test_init_options_stay_init_only(tsumugi: Tsumugi) -> None:
    # C-5 is unchanged: --name means nothing to an operator command
    outcome = tsumugi("stats", "--name", "w")
    assert outcome.code == 1 and outcome.err.startswith("tsumugi: unrecognized arguments: --name w")


@pytest.mark.parametrize(
    ("text", "epoch_ms"),
    [
        ("1777636800000", 1_777_636_800_000),
        ("2026-05-01T12:00:00Z", 1_777_636_800_000),
        ("2026-05-01 12:00:00", 1_777_636_800_000),  # no offset: UTC, as the tables print instants
        ("2026-05-01T14:00:00+02:00", 1_777_636_800_000),
    ],
)
def test_when_is_epoch_ms_or_iso_8601(text: str, epoch_ms: int) -> None:
    assert option_types.epoch_ms(text) == epoch_ms
