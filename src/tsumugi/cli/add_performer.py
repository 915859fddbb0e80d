"""``tsumugi add-performer NAME``: a performer module plus one export line (ADR-0087)."""
# C-13..C-16

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tsumugi.cli import scaffold_templates as templates
from tsumugi.cli.command_errors import add_init_only_options, reject_init_only_options, run_guarded
from tsumugi.cli.project_config import config_worker_name, find_config
from tsumugi.cli.project_names import PerformerNames, performer_names
from tsumugi.core.wrangler_fragments import FragmentValues, fragment_blocks, render_fragment
from tsumugi.errors import CommandLineError

SUMMARY = "add a performer to src/performers (class and module derived from NAME)"
USAGE_HINT = "add-performer requires exactly one name, e.g. `tsumugi add-performer send-mail`"  # C-5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="e.g. send-mail, SendMail, SEND_MAIL")
    parser.add_argument("--dir", default=".", help="project directory (default .)")
    add_init_only_options(parser)


def run(args: argparse.Namespace) -> int:
    return run_guarded(_add_performer, args)


def _add_performer(args: argparse.Namespace) -> int:
    reject_init_only_options(args)
    if len(args.names) != 1:
        raise CommandLineError(USAGE_HINT)
    names = performer_names(args.names[0])
    root = Path(args.dir)
    module_path, index_path = _check_preconditions(root, names)
    # C-15: the module first, then exactly one appended line; nothing existing is rewritten.
    module_path.write_text(templates.performer_module(names.class_name), encoding="utf-8")
    print(f"created {_shown(args.dir, module_path, root)}")
    _append_export(index_path, templates.export_line(names.class_name, names.module))
    print(f"added {names.class_name} to {_shown(args.dir, index_path, root)}")
    _print_service_fragment(root, names)
    return 0


def _check_preconditions(root: Path, names: PerformerNames) -> tuple[Path, Path]:
    """the performers package exists, the module does not, the export list lacks the class."""
    # C-14
    performers_dir = root / templates.PERFORMERS_DIR
    if not performers_dir.is_dir():
        raise CommandLineError(
            f"{templates.PERFORMERS_DIR}/ does not exist; run `tsumugi init` first to create the project"
        )
    module_path = performers_dir / f"{names.module}.py"
    if module_path.exists():
        raise CommandLineError(f"{templates.PERFORMERS_DIR}/{module_path.name} already exists")
    index_path = root / templates.PERFORMERS_INDEX
    if index_path.exists():
        exports = index_path.read_text(encoding="utf-8")
        if re.search(rf"\b{names.class_name}\b", exports):
            raise CommandLineError(f"{names.class_name} is already in {templates.PERFORMERS_INDEX}")
        if re.search(rf"(?m)^\s*(from|import)\s+(performers)?\.{names.module}\b", exports):
            raise CommandLineError(f"{templates.PERFORMERS_INDEX} already imports .{names.module}")
    return module_path, index_path


def _append_export(index_path: Path, line: str) -> None:
    """Append ``line``; create the index with its header when absent; add a missing final newline."""
    if not index_path.exists():
        index_path.write_text(templates.PERFORMERS_HEADER + line, encoding="utf-8")
        return
    existing = index_path.read_text(encoding="utf-8")
    separator = "" if existing == "" or existing.endswith("\n") else "\n"
    with index_path.open("a", encoding="utf-8") as index:
        index.write(separator + line)


def _print_service_fragment(root: Path, names: PerformerNames) -> None:
    """how another Worker binds this performer; this project's own config is not modified."""
    # C-16
    config = find_config(root)
    worker = config_worker_name(config) if config else None
    config_format = config.config_format if config else "jsonc"
    service = {"kind": "service", "name": names.class_name, "className": names.class_name}
    blocks = fragment_blocks([service], FragmentValues(worker=worker))
    print(
        f"\n{names.class_name} runs in this Worker without any binding. To enqueue it from another Worker,"
        f" add this to that Worker's wrangler.{config_format}:\n"
    )
    print(render_fragment(blocks, config_format))


def _shown(given: str, path: Path, root: Path) -> str:
    relative = path.relative_to(root).as_posix()
    return relative if given in ("", ".") else f"{given.rstrip('/')}/{relative}"
