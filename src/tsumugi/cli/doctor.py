"""``tsumugi doctor [DIR]``: what a project still lacks before Tsumugi can run (ADR-0088).

Missing bindings are reported exactly as the REST 503 and the typed paths report them, with the
fragment in the project's own format; the other checks follow as ``✓``/``✗`` lines. Exit 1 when any
check fails.
"""
# J-206

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tsumugi.application.environment_check import configuration_report
from tsumugi.cli.command_errors import add_init_only_options, reject_init_only_options, run_guarded
from tsumugi.cli.project_config import find_config
from tsumugi.cli.project_inspection import inspect_project
from tsumugi.errors import CommandLineError

SUMMARY = "check a project: bindings, exported Durable Objects, migrations, TSUMUGI_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", nargs="*", metavar="DIR", help="project directory (default .)")
    add_init_only_options(parser)


def run(args: argparse.Namespace) -> int:
    return run_guarded(_doctor, args)


def _doctor(args: argparse.Namespace) -> int:
    reject_init_only_options(args)
    if len(args.directory) > 1:
        raise CommandLineError("doctor accepts at most one directory, e.g. `tsumugi doctor my-worker`")
    root = Path(args.directory[0] if args.directory else ".")
    config = find_config(root)
    if config is None:
        raise CommandLineError(
            f"no wrangler.json, wrangler.jsonc or wrangler.toml in {root}; run `tsumugi init` to create one"
        )
    inspection = inspect_project(root, config, os.environ)
    if inspection.missing:
        print(configuration_report(inspection.missing, inspection.config_format) + "\n")
    else:
        print(f"✓ {config.path.name} declares every binding Tsumugi needs")
    for check in inspection.checks:
        print(f"{'✓' if check.ok else '✗'} {check.text}")
    if inspection.problems:
        noun = "problem" if inspection.problems == 1 else "problems"
        print(f"\ntsumugi: {inspection.problems} {noun} found")
        return 1
    print("\ntsumugi: the project is ready")
    return 0
