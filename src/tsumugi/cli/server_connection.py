"""How the operator commands reach a server: ``--url``/``--token``, the exit codes, and errors in words.

Exit codes (also in ``tsumugi --help`` and the README): 0 done; 1 a command-line error or an unexpected
failure; 2 the server could not be reached; 3 the token was missing or refused; 4 the server
refused the request (unknown id, not allowed in the job's state, invalid input), or refused some of the
jobs of a bulk change; 5 the server failed or does not offer the operation (5xx).
"""
# C-3, C-6

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import httpx

from tsumugi.errors import TsumugiError
from tsumugi.rest_client import RestApiError, TsumugiClient
from tsumugi.runtimes.local.dev_vars import TOKEN_VAR, load_vars

URL_VAR = "TSUMUGI_URL"
DEFAULT_URL = "http://127.0.0.1:8787"  # where `tsumugi dev` listens unless told otherwise


class ExitCode(IntEnum):
    OK = 0
    USAGE = 1
    UNREACHABLE = 2
    TOKEN_REFUSED = 3
    REFUSED = 4
    SERVER_ERROR = 5


class OperatorError(TsumugiError):
    """An operator command ends with ``tsumugi: <message>`` and ``exit_code``; never leaves the CLI."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Server:
    """Where to send requests, with which token, and whether the answer is printed as JSON."""

    url: str
    token: str | None
    as_json: bool


def add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", metavar="URL", help=f"the server (default ${URL_VAR}, else {DEFAULT_URL})")
    parser.add_argument(
        "--token", metavar="TOKEN", help=f"the bearer token (default ${TOKEN_VAR}, else .dev.vars)"
    )
    parser.add_argument("--json", dest="as_json", action="store_true", help="print JSON, not a table")


def server_of(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Server:
    """``--url``, ``$TSUMUGI_URL`` or the dev default; ``--token``, ``$TSUMUGI_TOKEN`` or ``.dev.vars``."""
    environ = os.environ if environ is None else environ
    url = (args.url or environ.get(URL_VAR) or DEFAULT_URL).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise OperatorError(f"the URL must start with http:// or https://, not {url!r}", ExitCode.USAGE)
    token = args.token or load_vars(cwd or Path.cwd(), environ).get(TOKEN_VAR) or None
    return Server(url, token, bool(args.as_json))


Body = Callable[[TsumugiClient, Server], int]


def call_server(args: argparse.Namespace, body: Body) -> int:
    """Run ``body`` with a client for the server ``args`` name; every failure is one line on stderr."""
    try:
        server = server_of(args)
    except OperatorError as error:
        return fail(error)
    try:
        with TsumugiClient(server.url, server.token) as client:
            return int(body(client, server))
    except OperatorError as error:
        return fail(error)
    except (RestApiError, httpx.HTTPError) as error:
        code, message = explain(error, server)
        sys.stderr.write(f"tsumugi: {message}\n")
        return int(code)


def fail(error: OperatorError) -> int:
    sys.stderr.write(f"tsumugi: {error}\n")
    return int(error.exit_code)


def explain(error: RestApiError | httpx.HTTPError, server: Server) -> tuple[ExitCode, str]:
    """The exit code and the sentence for a failed request."""
    if isinstance(error, RestApiError):
        return _refusal(error, server)
    if isinstance(error, httpx.ConnectError):
        return ExitCode.UNREACHABLE, (
            f"cannot connect to {server.url} ({_reason(error)}): is the server running? "
            f"Pass --url or set {URL_VAR}"
        )
    if isinstance(error, httpx.TimeoutException):
        return ExitCode.UNREACHABLE, f"{server.url} did not answer in time"
    return ExitCode.UNREACHABLE, f"cannot reach {server.url}: {_reason(error)}"


def _refusal(error: RestApiError, server: Server) -> tuple[ExitCode, str]:
    if error.status in (401, 403):
        if server.token is None:
            return ExitCode.TOKEN_REFUSED, (
                f"{server.url} asks for a token ({error.status}): pass --token, set {TOKEN_VAR}, "
                "or put it in .dev.vars"
            )
        return ExitCode.TOKEN_REFUSED, f"the token was refused by {server.url} ({error.status})"
    if error.status == 404:
        # an app without auth answers 404 everywhere; a wrong --url does too.
        return ExitCode.REFUSED, (
            f"{server.url} has no Tsumugi REST API here (404): check --url, and that the app is "
            f"defined with auth= and the server has {TOKEN_VAR} set"
        )
    if error.status == 501:  # run control or metrics not configured on this server
        return ExitCode.SERVER_ERROR, f"the server does not offer this (501): {error.message}"
    if error.status >= 500:
        return ExitCode.SERVER_ERROR, f"the server failed ({error.status}): {error.message}"
    return ExitCode.REFUSED, f"the server refused the request ({error.status}): {error.message}"


def _reason(error: httpx.HTTPError) -> str:
    text = str(error)
    if "refused" in text.lower():
        return "connection refused"
    return text or type(error).__name__
