"""Runs the dashboard's vitest suite (search parsing, sorting and paging state, graph model and
layout, formatting) so the one check command covers the front end too."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
VITEST_TIMEOUT_S = 180
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# CI=true makes vitest colour its output even into a pipe; plain text keeps the count readable.
PLAIN_ENV = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}


def test_vitest_suite_passes(npm: str) -> None:
    done = subprocess.run(
        ["npx", "--no-install", "vitest", "run", "--reporter=dot"],
        cwd=DASHBOARD,
        capture_output=True,
        text=True,
        timeout=VITEST_TIMEOUT_S,
        env=PLAIN_ENV,
    )
    output = ANSI_ESCAPE.sub("", done.stdout + done.stderr)
    assert done.returncode == 0, output
    passed = re.search(r"Tests\s+(\d+) passed", output)
    assert passed is not None and int(passed.group(1)) > 0, output


def test_typescript_type_check_passes(npm: str) -> None:
    # ADR-0090: vue-tsc checks the components and the pure modules together.
    done = subprocess.run(
        ["npx", "--no-install", "vue-tsc", "--noEmit", "-p", "tsconfig.json"],
        cwd=DASHBOARD,
        capture_output=True,
        text=True,
        timeout=VITEST_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
