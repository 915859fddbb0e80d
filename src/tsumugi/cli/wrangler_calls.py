"""Running wrangler for ``tsumugi init --provision`` and reading a new database's id.

Which wrangler: ``$TSUMUGI_WRANGLER`` (a command line), else the project's ``node_modules/.bin/wrangler``,
else ``wrangler`` on PATH, else ``npx --yes wrangler`` (as pywrangler calls it).
"""
# C-9

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# C-9 (3): JSON style first, then TOML style, then the first bare UUID (lowercase hex 8-4-4-4-12).
_UUID: Final = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_DATABASE_ID_PATTERNS: Final = (
    re.compile(rf'"database_id"\s*:\s*"({_UUID})"'),
    re.compile(rf'database_id\s*=\s*"({_UUID})"'),
    re.compile(rf"\b({_UUID})\b"),
)
INSTALL_HINT: Final = (
    "install it with `npm install --save-dev wrangler` (or use pywrangler), then run init again"
)


@dataclass(frozen=True)
class WranglerResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def wrangler_command(directory: Path) -> list[str]:
    """The command line that starts wrangler for the project in ``directory``."""
    configured = os.environ.get("TSUMUGI_WRANGLER")
    if configured:
        return shlex.split(configured)
    local = directory / "node_modules" / ".bin" / "wrangler"
    if local.is_file():
        return [str(local)]
    if shutil.which("wrangler"):
        return ["wrangler"]
    return ["npx", "--yes", "wrangler"]


def run_wrangler(directory: Path, args: Sequence[str]) -> WranglerResult:
    """Run ``wrangler <args>`` in ``directory``; a missing executable is a failed result, not an error."""
    command = [*wrangler_command(directory), *args]
    try:
        # stdin is not a terminal, so wrangler never prompts (it confirms remote migrations itself).
        done = subprocess.run(
            command, cwd=directory, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        return WranglerResult(127, "", str(exc))
    return WranglerResult(done.returncode, done.stdout, done.stderr)


def extract_database_id(stdout: str) -> str | None:
    """The id ``wrangler d1 create`` printed, or None (step 3)."""
    # C-9
    for pattern in _DATABASE_ID_PATTERNS:
        match = pattern.search(stdout)
        if match:
            return match.group(1)
    return None
