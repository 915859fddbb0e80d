"""`tsumugi dev` as a child process on a free port, for every suite that drives a real server.

Shared by the local runtime's tests (re-exported from ``tests/local/conftest.py``) and the CLI's.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

STARTUP_DEADLINE_S = 30.0  # generous: a cold interpreter imports starlette, uvicorn and the engine
POLL_INTERVAL_S = 0.05


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Callable[[], Any], deadline_s: float, what: str) -> Any:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` after ``deadline_s``."""
    give_up_at = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > give_up_at:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(POLL_INTERVAL_S)  # polling a child process with a deadline (noqa: sleep-ok)


class DevProcess:
    """One `tsumugi dev` child on a free port; ``url`` once it answers /healthz.

    It runs in ``state_dir``'s parent; ``options`` are added to the command line (``--reload``, ...).
    """

    def __init__(
        self,
        app: str | None,
        state_dir: Path,
        env: dict[str, str],
        port: int | None = None,
        options: Sequence[str] = (),
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "tsumugi.cli.main", "dev"]
        args += [app] if app else []
        args += ["--port", str(self.port), "--state-dir", str(state_dir), *options]
        # A file, not a pipe: a child that logs a line per job transition (the default INFO level) would
        # block on a full pipe that nobody reads until it exits.
        self._output = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = subprocess.Popen(
            args,
            env={**os.environ, **env},
            cwd=state_dir.parent,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            text=True,
        )
        wait_for(self._healthy, STARTUP_DEADLINE_S, f"tsumugi dev on port {self.port}")

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no cleanup at all, like a crash
        self.process.wait(timeout=10)  # reap it
        self._output.close()

    def terminate(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        self.process.send_signal(signum)
        self.process.wait(timeout=30)
        output = self.output()
        self._output.close()
        return self.process.returncode, output

    def output(self) -> str:
        """What the child printed so far."""
        if self._output.closed:
            return ""
        self._output.seek(0)
        return self._output.read()

    def _healthy(self) -> bool:
        if self.process.poll() is not None:
            output = self.output()
            raise AssertionError(f"tsumugi dev exited with {self.process.returncode}:\n{output}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
