"""What this process holds open, read from the kernel (not a test module): fds, fds under a path, RSS."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

PROC_FD = Path("/proc/self/fd")


def open_fds() -> int:
    """File descriptors this process has open."""
    return psutil.Process().num_fds()


def fds_under(directory: Path) -> int:
    """Open file descriptors on files under ``directory``."""
    prefix = f"{directory.resolve()}{os.sep}"
    return sum(target.startswith(prefix) for target in _targets())


def fds_on(database: Path) -> int:
    """Open file descriptors on one SQLite database: the file, its WAL and its shared-memory index."""
    path = str(database.resolve())
    return sum(target in (path, f"{path}-wal", f"{path}-shm") for target in _targets())


def _targets() -> list[str]:
    targets = []
    for fd in PROC_FD.iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            continue  # closed between the listing and the read (the listing's own fd, a worker's close)
    return targets


def rss_bytes() -> int:
    """Resident set size of this process."""
    return int(psutil.Process().memory_info().rss)
