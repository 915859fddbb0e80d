"""Running ``mypy --strict`` on a user's module whose bad lines say ``# BAD: <what>``.

The typed-API tests write such a module, check it as a user's project would be checked (the package from
``src/`` on ``MYPYPATH``), and hold mypy to reporting exactly the marked lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MYPY_DEADLINE_S = 240  # a cold mypy run over the package and its dependencies


def errors_by_mark(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    """``{what: mypy's errors on that line}`` for every ``# BAD: what`` line; fails on any other error."""
    module = tmp_path / name
    module.write_text(source, encoding="utf-8")
    options = ["--strict", "--no-error-summary", "--hide-error-context", "--no-pretty"]
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", *options, "--cache-dir", str(tmp_path / "cache"), str(module)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(SRC)},
        timeout=MYPY_DEADLINE_S,
        check=False,
    )
    errors: dict[int, list[str]] = {}
    for line in checked.stdout.splitlines():
        found = re.match(rf"(?:.*[/\\])?{re.escape(name)}:(\d+): error: (.*)", line)
        if found:
            errors.setdefault(int(found.group(1)), []).append(found.group(2))
    lines = source.splitlines()
    bad = {number for number, text in enumerate(lines, start=1) if "# BAD:" in text}
    assert set(errors) == bad, checked.stdout + checked.stderr  # every bad call, and nothing else
    return {lines[number - 1].split("# BAD: ")[1]: " ".join(errors[number]) for number in bad}
