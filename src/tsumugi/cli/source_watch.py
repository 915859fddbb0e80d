"""Which of an app's source files changed, found by polling their stats (ADR-0138: no watcher dependency).

A snapshot maps every watched file to its modification time and size; two snapshots differ when a file
was written, added or removed. Virtual environments, hidden directories (``.venv``, ``.git``, the
``.tsumugi`` state), ``__pycache__`` and ``node_modules`` are never walked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

WATCHED_SUFFIXES = (".py",)
WATCHED_NAMES = (".dev.vars",)  # the token and vars `tsumugi dev` reads at start
SKIPPED_DIRECTORIES = frozenset({"__pycache__", "node_modules", "site-packages"})
VENV_MARKER = "pyvenv.cfg"  # the file every virtual environment has at its root

Snapshot = Mapping[Path, tuple[int, int]]  # file -> (mtime_ns, size)


def snapshot(roots: Iterable[Path], skip: Iterable[Path] = ()) -> dict[Path, tuple[int, int]]:
    """The watched files under ``roots`` (recursively), leaving out the directories in ``skip``."""
    skipped = {path.resolve() for path in skip}
    files: dict[Path, tuple[int, int]] = {}
    for root in roots:
        for folder, directories, names in os.walk(root):
            here = Path(folder)
            directories[:] = [name for name in directories if _walked(here / name, skipped)]
            for name in names:
                if name.endswith(WATCHED_SUFFIXES) or name in WATCHED_NAMES:
                    _add(files, here / name)
    return files


def first_change(before: Snapshot, after: Snapshot) -> Path | None:
    """A file that was written, added or removed between the two snapshots; None when none was."""
    for path in sorted(before.keys() | after.keys()):
        if before.get(path) != after.get(path):
            return path
    return None


def _walked(directory: Path, skipped: set[Path]) -> bool:
    name = directory.name
    if name.startswith(".") or name in SKIPPED_DIRECTORIES or (directory / VENV_MARKER).exists():
        return False
    return directory.resolve() not in skipped


def _add(files: dict[Path, tuple[int, int]], path: Path) -> None:
    try:
        stat = path.stat()
    except OSError:  # removed while walking: the next snapshot has it gone
        return
    files[path] = (stat.st_mtime_ns, stat.st_size)
