"""Reading ``.dev.vars`` (wrangler's local secrets file, dotenv syntax) and the process environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

TOKEN_VAR = "TSUMUGI_TOKEN"


def parse_dev_vars(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines; ``#`` comments and blank lines ignored; one pair of quotes stripped."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def load_vars(directory: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The vars of ``directory/.dev.vars``; ``TSUMUGI_TOKEN`` from the environment wins over the file."""
    environ = os.environ if environ is None else environ
    path = directory / ".dev.vars"
    values = parse_dev_vars(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if environ.get(TOKEN_VAR):
        values[TOKEN_VAR] = environ[TOKEN_VAR]
    return values
