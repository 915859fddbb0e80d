"""Reading an existing wrangler file: detection order and the top-level name without a parser (C-8)."""

from __future__ import annotations

import json
from pathlib import Path

import json5
import pytest

from tsumugi.cli.project_config import (
    find_config,
    jsonc_to_json,
    jsonc_top_level_name,
    toml_top_level_name,
)
from tsumugi.cli.project_names import worker_name_from


@pytest.mark.parametrize(
    ("present", "found"),
    [
        (["wrangler.toml", "wrangler.jsonc", "wrangler.json"], "wrangler.json"),
        (["wrangler.toml", "wrangler.jsonc"], "wrangler.jsonc"),
        (["wrangler.toml"], "wrangler.toml"),
    ],
)
def test_detection_order(tmp_path: Path, present: list[str], found: str) -> None:
    # C-8: wrangler.json, then wrangler.jsonc, then wrangler.toml
    for name in present:
        (tmp_path / name).write_text("")
    config = find_config(tmp_path)
    assert config is not None and config.path.name == found
    assert config.config_format == ("toml" if found.endswith("toml") else "jsonc")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('{"name": "w"}', "w"),
        ('{ /* a */ "name" /* b */ : // c\n "w" }', "w"),  # comments between key, colon and value
        ('{"vars": {"name": "inner"}, "name": "outer"}', "outer"),  # depth 1 only
        ('{"services": [{"name": "x"}], "main": "name"}', None),
        ('{"a": "// \\"name\\": \\"no\\"", "name": "yes"}', "yes"),  # strings are skipped whole
        ('{"name": 3}', None),
        ("{}", None),
    ],
)
def test_jsonc_name(text: str, name: str | None) -> None:
    assert jsonc_top_level_name(text) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('name = "w"\n', "w"),
        ("# c\nname = 'lit'\n", "lit"),
        ('main = "x"\n  name = "esc\\"aped"\n', 'esc"aped'),
        ('[vars]\nname = "table"\n', None),  # C-8: only before the first table header
        ('names = "no"\n', None),
    ],
)
def test_toml_name(text: str, name: str | None) -> None:
    assert toml_top_level_name(text) == name


@pytest.mark.parametrize(
    "text",
    [
        '// head\n{"a": [1, 2, ], "b": {"c": "// not a comment", "d": "/* nor */"}, /* tail */ }',
        '{"x": "a, }", "y": [ {"z": true,}, ], }',
        '{"url": "http://x/*y*/"}',
    ],
)
def test_jsonc_to_json_matches_a_jsonc_reader(text: str) -> None:
    assert json.loads(jsonc_to_json(text)) == json5.loads(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("My_Project", "my-project"),
        ("mailWorker", "mail-worker"),
        ("a.b c", "a-b-c"),
        ("@@", "tsumugi-worker"),
    ],
)
def test_worker_names_from_folders(text: str, name: str) -> None:
    # C-7 (port): a folder or package name made Worker-safe (ADR-0086)
    assert worker_name_from(text) == name
