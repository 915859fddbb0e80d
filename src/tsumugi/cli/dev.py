"""``tsumugi dev [APP]``: run an app on the embedded local runtime with an HTTP server."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from tsumugi.cli.command_errors import add_init_only_options, reject_init_only_options
from tsumugi.errors import CommandLineError, LocalRuntimeError
from tsumugi.runtimes.local.app_loader import load_app
from tsumugi.runtimes.local.dev_server import serve_dev
from tsumugi.runtimes.local.dev_vars import load_vars

SUMMARY = "run the app locally (embedded runtime + HTTP server)"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787  # wrangler dev's default port, so URLs work against either
DEFAULT_STATE_DIR = ".tsumugi"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "app",
        nargs="?",
        metavar="APP",
        help="path/to/app.py, module or module:attr (default: the repository's example app, src/app.py)",
    )
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(DEFAULT_STATE_DIR),
        help=f"where shards, alarms, the queue and the read model live (default {DEFAULT_STATE_DIR})",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="dispatch messages per consumer batch")
    add_init_only_options(parser)


def run(args: argparse.Namespace) -> int:
    try:
        reject_init_only_options(args)  # C-5's message for every command but init
    except CommandLineError as error:
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        loaded = load_app(args.app)
        vars = load_vars(Path.cwd())
        asyncio.run(
            serve_dev(
                loaded,
                args.state_dir,
                host=args.host,
                port=args.port,
                vars=vars,
                batch_size=args.batch_size,
            )
        )
    except LocalRuntimeError as error:
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    return 0
