"""``tsumugi dev [APP]``: run an app on the embedded local runtime with an HTTP server.

APP is ``path/to/app.py``, ``module`` or ``module:attr``; the current directory is on the import path,
as it is for ``python -m``. Without APP: ``app.py``, else ``src/app.py`` (the ``tsumugi init`` layout),
else the repository's example app.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from tsumugi.cli.command_errors import add_init_only_options, reject_init_only_options
from tsumugi.cli.dev_reload import child_command, run_with_reload
from tsumugi.errors import AppLoadError, CommandLineError, LocalRuntimeError
from tsumugi.logging import LOG_FORMAT_ENV, log_handler
from tsumugi.runtimes.local.app_loader import default_app_path, load_app
from tsumugi.runtimes.local.dev_server import serve_dev
from tsumugi.runtimes.local.dev_vars import load_vars

SUMMARY = "run the app locally (embedded runtime + HTTP server)"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787  # wrangler dev's default port, so URLs work against either
DEFAULT_STATE_DIR = ".tsumugi"
DEFAULT_APP_FILES = ("app.py", "src/app.py")  # looked for in the current directory when APP is not given
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "app",
        nargs="?",
        metavar="APP",
        help="path/to/app.py, module or module:attr (default: app.py or src/app.py, else the example)",
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
    parser.add_argument("--reload", action="store_true", help="restart when a .py file or .dev.vars changes")
    parser.add_argument(
        "--log-level", type=str.lower, choices=LOG_LEVELS, default="info", help="log threshold (default info)"
    )
    parser.add_argument(
        "--log-format",
        type=str.lower,
        choices=LOG_FORMATS,
        default=None,
        help=f"log lines as text or one JSON object each (default ${LOG_FORMAT_ENV}, else text)",
    )
    add_init_only_options(parser)


def run(args: argparse.Namespace) -> int:
    try:
        reject_init_only_options(args)  # C-5's message for every command but init
        spec = app_spec(args.app, Path.cwd())
    except (CommandLineError, AppLoadError) as error:
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    if args.reload:
        return run_with_reload(child_command(_child_options(args)), *_watched(spec, args.state_dir))
    try:
        handler = log_handler(args.log_format)  # ADR-0145: --log-format, else TSUMUGI_LOG_FORMAT
    except ValueError as error:
        sys.stderr.write(f"tsumugi: {error}\n")
        return 1
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    put_on_import_path(Path.cwd())
    try:
        loaded = load_app(spec)
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


def app_spec(app: str | None, cwd: Path) -> str | None:
    """APP as given; else the first default app file in ``cwd``; else None: the example app, if present."""
    if app:
        return app
    for name in DEFAULT_APP_FILES:
        if (cwd / name).is_file():
            return name
    if default_app_path().is_file():
        return None
    looked_for = " or ".join(DEFAULT_APP_FILES)
    raise AppLoadError(
        f"no APP given and no {looked_for} in {cwd}: name it as path/to/app.py, MODULE or MODULE:ATTR"
    )


def put_on_import_path(cwd: Path) -> None:
    """The current directory first on ``sys.path``, so that APP may be a module here (``myapp:tsumugi``)."""
    if str(cwd) not in sys.path:
        sys.path.insert(0, str(cwd))


def _child_options(args: argparse.Namespace) -> list[str]:
    options = [args.app] if args.app else []
    options += ["--host", args.host, "--port", str(args.port), "--state-dir", str(args.state_dir)]
    options += ["--log-level", args.log_level]
    options += ["--log-format", args.log_format] if args.log_format else []
    return options + (["--batch-size", str(args.batch_size)] if args.batch_size else [])


def _watched(spec: str | None, state_dir: Path) -> tuple[list[Path], list[Path]]:
    """The directories to watch (here, and an app file's folder elsewhere) and the state dir to skip."""
    roots = [Path.cwd()]
    target = spec or str(default_app_path())
    head, _, attr = target.rpartition(":")
    if head and attr.isidentifier():
        target = head  # path/to/app.py:attr
    if target.endswith(".py"):
        folder = Path(target).resolve().parent
        if not folder.is_relative_to(Path.cwd().resolve()):
            roots.append(folder)
    return roots, [state_dir]
