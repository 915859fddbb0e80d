"""Proof 4: Pyodide 0.28.2 (the Workers interpreter) under Node runs the pure core tests and the adapter's
conversion and binding checks (tests/platform/in_pyodide) with Miniflare's real D1 and Queue."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.platform.node_tooling import HARNESS_DIR, NODE_MODULES, REPO_ROOT, node_or_skip, tool_env

# Pure-Python wheels for Python 3.13, cached in an ignored directory; pytest at the version this venv runs
# (the registry may lack a pure wheel of the venv's exact plugin versions, so those float).
WHEEL_CACHE = NODE_MODULES / ".cache" / "tsumugi-pyodide-wheels"
TEST_PACKAGES = ("pytest-asyncio", "hypothesis")
PYODIDE_SUITES = ("tests/unit", "tests/platform/in_pyodide")
IN_PYODIDE_DIR = Path(__file__).resolve().parent / "in_pyodide"
RUN_TIMEOUT_S = 280  # under the 300 s pytest-timeout of this test


def wheel_dir() -> Path:
    pins = [f"pytest=={importlib.metadata.version('pytest')}", *TEST_PACKAGES]
    target = WHEEL_CACHE / pins[0].replace("==", "-")
    if not any(target.glob("pytest-*.whl")):
        command = [
            sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--only-binary=:all:", "--python-version", "3.13", "--implementation", "py", "--abi", "none",
            "--platform", "any", "-d", str(target), *pins,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
        if result.returncode != 0:
            pytest.skip(f"cannot download the test wheels for Pyodide: {result.stderr[-500:]}")
    return target


@pytest.mark.platform
def test_core_and_adapter_suites_pass_inside_pyodide() -> None:
    node = node_or_skip()
    args = ["-c", "tests/platform/harness/pyodide_pytest.ini", "--rootdir", "/repo", "-q", "-rA"]
    args += ["-o", "python_files=test_*.py check_*.py", *PYODIDE_SUITES]
    result = subprocess.run(
        [
            node,
            "--experimental-wasm-stack-switching",
            str(HARNESS_DIR / "pyodide_pytest.mjs"),
            str(wheel_dir()),
            str(REPO_ROOT),
            json.dumps(args),
        ],
        capture_output=True,
        text=True,
        env=tool_env(),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    summary = re.search(r"(\d+) passed", output)
    assert summary is not None and int(summary.group(1)) > 0, output[-2000:]
    assert "skipped" not in output.splitlines()[-1], output[-2000:]
    for check in IN_PYODIDE_DIR.glob("check_*.py"):
        tests = re.findall(r"^(?:async )?def (test_\w+)", check.read_text(encoding="utf-8"), re.M)
        for test in tests:  # each adapter check ran for real inside Pyodide, none was skipped
            assert f"PASSED tests/platform/in_pyodide/{check.name}::{test}" in output
    print(output.splitlines()[-1])
