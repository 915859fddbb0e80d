"""How a single retry, cancel, reschedule or resume answer is printed, and its exit code."""
#

from __future__ import annotations

import sys
from collections.abc import Mapping

from tsumugi.cli.server_connection import ExitCode, OperatorError, Server
from tsumugi.cli.text_output import json_text

# The REST client's reasons for a refused mutation (409 and 410), and a bulk result's, in words.
REASONS = {
    "invalid-state": "not allowed in its current state",
    "gone": "no longer available (removed after the retention period, or never there)",
    "invalid-id": "not a valid id",
}


def report_mutation(answer: Mapping[str, object], subject: str, past: str, server: Server) -> int:
    """``<past> <subject>`` for an accepted change; a refused one is exit 4 with the reason in words.

    With ``--json`` the answer itself is printed, accepted or not (the exit code still tells them apart).
    """
    accepted = answer.get("ok") is True
    if server.as_json:
        sys.stdout.write(json_text(dict(answer)))
        return ExitCode.OK if accepted else ExitCode.REFUSED
    if not accepted:
        reason = str(answer.get("reason"))
        raise OperatorError(f"{subject} was not {past}: {REASONS.get(reason, reason)}", ExitCode.REFUSED)
    if answer.get("requested") is True:  # J-135: a queued or running job is asked to stop
        sys.stdout.write(
            f"asked {subject} to stop: it is queued or running, and sees it at its next heartbeat\n"
        )
    else:
        sys.stdout.write(f"{past} {subject}\n")
    return ExitCode.OK
