"""The example app and a fresh ``tsumugi init`` project use only public imports and pass ``mypy --strict``.

Issue 14 item 5. The Worker entry (``src/entry.py``) is left out of the type check: its classes subclass
the Workers SDK, which exists only inside the Workers runtime, so mypy cannot see their bases. Its imports
are still held to the public modules.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Tsumugi

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
MYPY_DEADLINE_S = 300  # a cold mypy run over the package and its dependencies
# The modules an app imports from: the package itself, its test harness and log formatting, and the
# Cloudflare runtime, which only a Worker entry imports.
PUBLIC_MODULES = {"tsumugi", "tsumugi.testing", "tsumugi.logging"}
ENTRY_MODULES = PUBLIC_MODULES | {"tsumugi.runtimes.cloudflare"}


def _tsumugi_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tsumugi":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "tsumugi")
    return found


def _mypy_strict(cwd: Path, cache: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache), *targets],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "MYPYPATH": str(SRC)},
        timeout=MYPY_DEADLINE_S,
        check=False,
    )


def test_the_example_app_uses_public_imports_and_passes_mypy_strict(tmp_path: Path) -> None:
    assert _tsumugi_imports(SRC / "app.py") <= PUBLIC_MODULES
    assert _tsumugi_imports(SRC / "entry.py") <= ENTRY_MODULES
    checked = _mypy_strict(SRC, tmp_path / "cache", "app.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_fresh_init_project_uses_public_imports_and_passes_mypy_strict(
    tsumugi: Tsumugi, tmp_path: Path
) -> None:
    assert tsumugi("init", "my-worker").code == 0
    assert tsumugi("add-performer", "SendReport", "--dir", "my-worker").code == 0
    src = tmp_path / "my-worker" / "src"
    modules = [src / "app.py", *sorted((src / "performers").glob("*.py"))]
    assert len(modules) == 4  # app, the package, hello and the added performer
    for module in modules:
        assert _tsumugi_imports(module) <= PUBLIC_MODULES, module
    assert _tsumugi_imports(src / "entry.py") <= ENTRY_MODULES
    checked = _mypy_strict(src, tmp_path / "cache", "app.py", "performers")
    assert checked.returncode == 0, checked.stdout + checked.stderr
