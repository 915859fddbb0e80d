"""``tsumugi stats``: jobs per state and the oldest scheduled job's wait (``GET /api/stats``)."""
#

from __future__ import annotations

import argparse
import sys

from tsumugi.cli import operator_views
from tsumugi.cli.server_connection import ExitCode, Server, add_server_options, call_server
from tsumugi.cli.text_output import json_text
from tsumugi.rest_client import TsumugiClient

SUMMARY = "jobs per state, and how long the oldest scheduled job has waited (REST API)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    return call_server(args, _stats)


def _stats(client: TsumugiClient, server: Server) -> int:
    answer = client.stats()
    sys.stdout.write(json_text(answer) if server.as_json else operator_views.stats(answer))
    return ExitCode.OK
