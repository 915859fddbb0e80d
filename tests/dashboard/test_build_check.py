"""The shipped dashboard is reproducible from dashboard/ (ADR-0091): a clean rebuild is byte-identical."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK_TIMEOUT_S = 280


def test_shipped_build_matches_a_fresh_build(npm: str) -> None:
    done = subprocess.run(
        [str(REPO / "scripts" / "check-dashboard-build")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "matches the source" in done.stdout
