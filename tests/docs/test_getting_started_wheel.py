"""The getting-started page runs as written from a fresh virtual environment holding only the built wheel.

The page's install step names a clone; this test does what that step does with the artifact a user
would carry: it builds the wheel, installs it (and its dependencies) into a new venv, and runs every
sample of the page with that venv's ``python`` and ``tsumugi`` first on the PATH, nothing of this
checkout on the import path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.docs import samples

PAGE = samples.GUIDE / "getting-started.md"
INSTALL_TIMEOUT_S = 600  # the dependencies come from the package index: minutes at worst


def _run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"`{' '.join(argv)}` exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
def test_getting_started_runs_from_a_fresh_venv_with_the_wheel(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(samples.REPO), "--no-deps", "-w", str(dist), "-q"])
    (wheel,) = dist.glob("tsumugi-*-py3-none-any.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)])

    where = _run([python, "-c", "import tsumugi; print(tsumugi.__file__)"], cwd=tmp_path).stdout.strip()
    assert Path(where).is_relative_to(venv), f"tsumugi was imported from {where}, not the wheel"
    assert (venv / "bin" / "tsumugi").is_file()

    samples.run_page(PAGE, tmp_path / "project", python=python)
