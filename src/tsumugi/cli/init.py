"""``tsumugi init [DIR]``: a ready Python Worker project with Tsumugi (ADR-0086).

Nothing talks to Cloudflare unless ``--provision`` asks for it; otherwise the wrangler calls are
printed as next steps and ``database_id`` keeps its ``<id>`` placeholder.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from tsumugi.cli import scaffold_templates as templates
from tsumugi.cli.command_errors import run_guarded
from tsumugi.cli.main import version
from tsumugi.cli.project_config import CONFIG_FILES, ProjectConfig, default_worker_name, find_config
from tsumugi.cli.project_files import ProjectFiles
from tsumugi.cli.project_names import check_worker_name
from tsumugi.cli.wrangler_calls import INSTALL_HINT, WranglerResult, extract_database_id, run_wrangler
from tsumugi.core.wrangler_fragments import (
    ConfigFormat,
    FragmentValues,
    fragment_blocks,
    render_fragment,
    required_bindings,
)
from tsumugi.errors import CommandLineError

SUMMARY = "create a Python Worker project with Tsumugi in DIR (default .)"
FORMATS: tuple[ConfigFormat, ...] = ("jsonc", "toml")
INITIAL_MIGRATION_TAG = "v1"  # C-9 (4): the first Durable Object migration of a new Worker


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", nargs="*", metavar="DIR", help="project directory (default .)")
    parser.add_argument("--name", help="Worker name (default: from the wrangler file, pyproject or DIR)")
    parser.add_argument(
        "--format", dest="config_format", default="jsonc", metavar="jsonc|toml", help="default jsonc"
    )
    parser.add_argument("--force", action="store_true", help="overwrite files that already exist")
    parser.add_argument(
        "--provision",
        action="store_true",
        help="run wrangler: create the queue and the D1 database, apply the migrations",
    )


def run(args: argparse.Namespace) -> int:
    return run_guarded(_init, args)


@dataclass(frozen=True)
class _Plan:
    root: Path
    shown: str
    name: str
    config_format: ConfigFormat
    existing: ProjectConfig | None


def _plan(args: argparse.Namespace) -> _Plan:
    """Validate every argument before anything runs or is written."""
    # C-4
    if len(args.directory) > 1:
        raise CommandLineError("init accepts at most one directory, e.g. `tsumugi init my-worker`")
    if args.config_format not in FORMATS:
        raise CommandLineError(f'unknown format "{args.config_format}", use jsonc or toml')
    shown = args.directory[0] if args.directory else "."
    root = Path(shown)
    if root.exists() and not root.is_dir():
        raise CommandLineError(f"{shown} exists and is not a directory")
    name = check_worker_name(args.name) if args.name is not None else default_worker_name(root)
    existing = find_config(root) if root.is_dir() else None
    config_format: ConfigFormat = existing.config_format if existing else args.config_format
    return _Plan(root, shown, name, config_format, existing)


def _init(args: argparse.Namespace) -> int:
    plan = _plan(args)
    if args.provision:
        _check_wrangler(plan)
    plan.root.mkdir(parents=True, exist_ok=True)
    database_id = _provision(plan) if args.provision else None
    files = ProjectFiles(plan.root, plan.shown, force=args.force)
    values = FragmentValues(
        database_name=plan.name,
        database_id=database_id,
        queue=plan.name,
        migration_tag=INITIAL_MIGRATION_TAG,
    )
    blocks = fragment_blocks(required_bindings(flows=False, schedules=False), values)
    config_written = False
    if plan.existing is not None and not args.force:
        # C-9 (4), C-12: an existing configuration is never touched; print what to append.
        print(
            f"found {files.display(plan.existing.path.name)}: left unchanged; append this fragment to it:\n"
        )
        print(render_fragment(blocks, plan.existing.config_format) + "\n")
    else:
        config_name = plan.existing.path.name if plan.existing else _config_file(plan.config_format)
        config_written = files.write(
            config_name, templates.wrangler_config(plan.name, blocks, plan.config_format)
        )
    _scaffold(files, plan.name)
    if args.provision and config_written:
        _apply_migrations(plan)
    _print_next_steps(plan, files, provisioned=args.provision, config_written=config_written)
    # C-10: exit 1 when provisioning could not learn the database id (the file keeps <id>).
    return 1 if args.provision and database_id is None else 0


def _config_file(config_format: ConfigFormat) -> str:
    return next(name for name, fmt in CONFIG_FILES if fmt == config_format and name != "wrangler.json")


def _scaffold(files: ProjectFiles, name: str) -> None:
    """Each file only if absent; the entry, one performer, the export list, local secrets."""
    files.write("pyproject.toml", templates.pyproject(name, _tsumugi_requirement()))
    files.write(templates.APP_PATH, templates.APP)
    files.write(templates.ENTRY_PATH, templates.ENTRY)
    files.write(
        templates.PERFORMERS_INDEX, templates.PERFORMERS_HEADER + templates.export_line("Hello", "hello")
    )
    files.write(f"{templates.PERFORMERS_DIR}/hello.py", templates.performer_module("Hello"))
    files.write(".dev.vars.example", templates.DEV_VARS)
    files.write(".dev.vars", templates.DEV_VARS)
    files.write(".gitignore", templates.GITIGNORE)


def _tsumugi_requirement() -> str:
    installed = version()
    return "tsumugi" if installed == "unknown" else f"tsumugi>={installed}"


def _check_wrangler(plan: _Plan) -> None:
    """Before anything is written, wrangler must start."""
    cwd = plan.root if plan.root.is_dir() else Path.cwd()
    if not run_wrangler(cwd, ["--version"]).ok:
        raise CommandLineError(f"wrangler is not available\n{INSTALL_HINT}")


def _wrangler(plan: _Plan, args: list[str]) -> WranglerResult:
    print(f"running wrangler {' '.join(args)}")
    return run_wrangler(plan.root, args)


def _provision(plan: _Plan) -> str | None:
    """The queue and the database are created; returns the database id, if printed."""
    if not _wrangler(plan, ["queues", "create", plan.name]).ok:
        _warn(f"could not create the queue {plan.name} (it may already exist)")
    created = _wrangler(plan, ["d1", "create", plan.name])
    database_id = extract_database_id(created.stdout) if created.ok else None
    if database_id is None:
        _warn(f"could not read database_id from `wrangler d1 create {plan.name}`; fill in <id> yourself")
    return database_id


def _apply_migrations(plan: _Plan) -> None:
    """Local, then remote; failures are warnings (``pywrangler sync`` may not have run yet)."""
    for where in ("--local", "--remote"):
        if not _wrangler(plan, ["d1", "migrations", "apply", plan.name, where]).ok:
            _warn(
                f"`wrangler d1 migrations apply {plan.name} {where}` failed; run it after `pywrangler sync`"
            )


def _warn(message: str) -> None:
    sys.stderr.write(f"tsumugi: warning: {message}\n")


def _print_next_steps(plan: _Plan, files: ProjectFiles, *, provisioned: bool, config_written: bool) -> None:
    config_name = plan.existing.path.name if plan.existing else _config_file(plan.config_format)
    steps = [] if plan.shown in ("", ".") else [f"cd {plan.shown}"]
    if not config_written:
        steps.append(f"append the fragment above to {config_name}")
    if not provisioned:
        steps.append(f"wrangler queues create {plan.name}")
        steps.append(f"wrangler d1 create {plan.name}  (then put its database_id into {config_name})")
    steps.append("pywrangler sync  (vendors tsumugi and its migrations into python_modules/)")
    if not provisioned or not config_written:
        steps.append(f"wrangler d1 migrations apply {plan.name} --local  (and --remote before deploying)")
    steps.append("wrangler secret put TSUMUGI_TOKEN  (for the deployed Worker; locally .dev.vars has one)")
    steps.append("tsumugi doctor  (checks bindings, exports, migrations and the token)")
    steps.append("tsumugi dev src/app.py  (runs it on CPython) or pywrangler dev; then open the dashboard")
    steps.append("the dashboard is at http://localhost:8787/")
    print("\nnext steps:")
    print("\n".join(f"  {number}. {step}" for number, step in enumerate(steps, start=1)))
