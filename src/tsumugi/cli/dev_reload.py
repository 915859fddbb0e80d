"""``tsumugi dev --reload``: run the server as a child process and restart it when a source file changes.

The parent only watches (``source_watch``) and restarts; the child is a plain ``tsumugi dev`` with the
same options, so a restart is a clean stop (attempts finish, state files close) and a fresh import.
A child that exits on its own, say on an import error just saved, is started again at the next change.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from tsumugi.cli.source_watch import first_change, snapshot

POLL_INTERVAL_S = 0.5  # a saved file restarts the server within half a second
STOP_TIMEOUT_S = 30.0  # a stopping server lets running attempts finish; past this it is killed


def child_command(options: Sequence[str]) -> list[str]:
    """``tsumugi dev`` with ``options`` (no ``--reload``), as this interpreter runs it."""
    return [sys.executable, "-m", "tsumugi.cli.main", "dev", *options]


def run_with_reload(
    command: Sequence[str], roots: Sequence[Path], skip: Sequence[Path], poll_s: float = POLL_INTERVAL_S
) -> int:
    """Serve with ``command`` until SIGINT or SIGTERM, restarting it after every change under ``roots``."""
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        before = snapshot(roots, skip)
        child = subprocess.Popen(command)
        watched = ", ".join(str(root) for root in roots)
        print(f"tsumugi dev: watching {watched} for changes (--reload)", flush=True)
        told_exit = False
        while not stopping.wait(poll_s):
            after = snapshot(roots, skip)
            changed = first_change(before, after)
            if changed is None:
                if child.poll() is not None and not told_exit:
                    print(
                        f"tsumugi dev: the server exited with {child.returncode}; waiting for a change",
                        flush=True,
                    )
                    told_exit = True
                continue
            print(f"tsumugi dev: {changed} changed, restarting", flush=True)
            _stop(child)
            before, told_exit = after, False
            child = subprocess.Popen(command)
        _stop(child)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
