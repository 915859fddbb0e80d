"""Finding and reading a project's wrangler configuration and Worker name.

The top-level ``name`` is read without a full parser; ``load_config`` parses the whole
file (JSONC through the same tokenizer, TOML through ``tomllib``) for ``tsumugi doctor``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tsumugi.cli.project_names import worker_name_from
from tsumugi.core.wrangler_fragments import ConfigFormat
from tsumugi.errors import CommandLineError

# C-8: the detection order.
CONFIG_FILES: Final[tuple[tuple[str, ConfigFormat], ...]] = (
    ("wrangler.json", "jsonc"),
    ("wrangler.jsonc", "jsonc"),
    ("wrangler.toml", "toml"),
)
_JSONC_TOKEN: Final = re.compile(
    r"""(?P<space>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<string>"(?:[^"\\\n]|\\.)*")"""
    r"""|(?P<punct>[{}\[\]:,])|(?P<literal>[^\s{}\[\]:,"/]+)""",
    re.S,
)
_TOML_NAME: Final = re.compile(r"""^\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')""")
_TOML_HEADER: Final = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class ProjectConfig:
    """An existing wrangler configuration file and its format."""

    path: Path
    config_format: ConfigFormat


def find_config(directory: Path) -> ProjectConfig | None:
    """The first of wrangler.json, wrangler.jsonc, wrangler.toml that exists."""
    # C-8
    for file_name, config_format in CONFIG_FILES:
        path = directory / file_name
        if path.is_file():
            return ProjectConfig(path, config_format)
    return None


def _jsonc_tokens(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` of each JSONC token, without whitespace and comments."""
    position = 0
    while position < len(text):
        match = _JSONC_TOKEN.match(text, position)
        if match is None:
            line = text.count("\n", 0, position) + 1
            raise CommandLineError(f"cannot parse the JSONC configuration (line {line})")
        position = match.end()
        kind = str(match.lastgroup)
        if kind not in ("space", "comment"):
            yield kind, match.group()


def jsonc_top_level_name(text: str) -> str | None:
    """the string value of the depth-1 key ``name``; comments may sit anywhere between tokens."""
    # C-8
    depth = 0
    previous = ""
    pending_key: str | None = None
    for kind, token in _jsonc_tokens(text):
        if kind == "punct" and token in "{[":
            depth += 1
        elif kind == "punct" and token in "}]":
            depth -= 1
        elif kind == "string" and depth == 1 and previous in ("{", ","):
            pending_key = json.loads(token)
        elif kind == "string" and depth == 1 and previous == ":" and pending_key == "name":
            return str(json.loads(token))
        previous = token if kind == "punct" else kind
    return None


def toml_top_level_name(text: str) -> str | None:
    """The first ``name = "…"`` or ``name = '…'`` line before the first table header."""
    for line in text.splitlines():
        if _TOML_HEADER.match(line):
            return None
        match = _TOML_NAME.match(line)
        if match:
            double, single = match.groups()
            return str(json.loads(f'"{double}"')) if double is not None else single
    return None


def config_worker_name(config: ProjectConfig) -> str | None:
    """The top-level ``name`` of an existing configuration, or None."""
    text = config.path.read_text(encoding="utf-8")
    if config.config_format == "toml":
        return toml_top_level_name(text)
    return jsonc_top_level_name(text)


def jsonc_to_json(text: str) -> str:
    """Plain JSON from JSONC: comments dropped, trailing commas before ``}``/``]`` removed."""
    tokens = list(_jsonc_tokens(text))
    kept = [
        token
        for index, (kind, token) in enumerate(tokens)
        if not (token == "," and index + 1 < len(tokens) and tokens[index + 1][1] in ("}", "]"))
    ]
    return " ".join(kept)


def load_config(config: ProjectConfig) -> dict[str, object]:
    """The whole configuration as a dict (JSONC or TOML); what its values are is for the reader to check."""
    text = config.path.read_text(encoding="utf-8")
    try:
        loaded: object = (
            tomllib.loads(text) if config.config_format == "toml" else json.loads(jsonc_to_json(text))
        )
    except (ValueError, CommandLineError) as exc:  # tomllib.TOMLDecodeError and JSONDecodeError
        raise CommandLineError(f"cannot parse {config.path.name}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise CommandLineError(f"{config.path.name} does not hold an object")
    return loaded


def default_worker_name(directory: Path) -> str:
    """After ``--name``: the config's name, pyproject's, package.json's (no ``@scope/``), the folder's."""
    config = find_config(directory)
    if config is not None:
        name = config_worker_name(config)
        if name:
            return name
    for file_name, read in (("pyproject.toml", _pyproject_name), ("package.json", _package_json_name)):
        path = directory / file_name
        if path.is_file():
            found = read(path.read_text(encoding="utf-8"))
            if found:
                return worker_name_from(found)
    return worker_name_from(directory.resolve().name)


def _pyproject_name(text: str) -> str | None:
    try:
        name = tomllib.loads(text).get("project", {}).get("name")
    except tomllib.TOMLDecodeError:
        return None
    return name if isinstance(name, str) else None


def _package_json_name(text: str) -> str | None:
    try:
        name = json.loads(text).get("name")
    except (ValueError, AttributeError):
        return None
    return name.split("/", 1)[1] if isinstance(name, str) and name.startswith("@") and "/" in name else name
