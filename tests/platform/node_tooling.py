"""Finding and running the pinned Node tooling (package.json) for the platform proofs (ADR-0080)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
NODE_MODULES: Final = REPO_ROOT / "node_modules"
HARNESS_DIR: Final = Path(__file__).resolve().parent / "harness"
WRANGLER_BIN: Final = NODE_MODULES / "wrangler" / "bin" / "wrangler.js"

# PLATFORM.md: every wrangler/Miniflare call runs without telemetry and without fetching Request.cf.
QUIET_ENV: Final = {"WRANGLER_SEND_METRICS": "false", "CLOUDFLARE_CF_FETCH_ENABLED": "false"}


def tool_env(**extra: str) -> dict[str, str]:
    """The process environment for a wrangler/Miniflare/Node subprocess."""
    return {**os.environ, **QUIET_ENV, "NO_COLOR": "1", "FORCE_COLOR": "0", **extra}


def node_or_skip() -> str:
    """The ``node`` executable with the pinned packages installed, or skip with the reason."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the platform proofs need Node 20 (CI installs it)")
    for package in ("wrangler", "miniflare", "pyodide"):
        if not (NODE_MODULES / package / "package.json").is_file():
            pytest.skip(f"node_modules/{package} is missing: run `npm ci` at the repository root")
    return node


def run_wrangler(
    args: list[str], *, cwd: Path = REPO_ROOT, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the pinned wrangler with the quiet environment; stdout and stderr are captured as text."""
    node = node_or_skip()
    return subprocess.run(
        [node, str(WRANGLER_BIN), *args],
        cwd=cwd,
        env=tool_env(WRANGLER_LOG_PATH=str(cwd / ".wrangler" / "logs")),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
        check=False,
    )
