"""Reading the root project's wrangler.jsonc and the names its ``main`` module exports."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import json5
from tests.platform.node_tooling import REPO_ROOT

WRANGLER_CONFIG = REPO_ROOT / "wrangler.jsonc"


def load_config() -> dict[str, Any]:
    config: dict[str, Any] = json5.loads(WRANGLER_CONFIG.read_text(encoding="utf-8"))
    return config


def main_module(config: dict[str, Any]) -> Path:
    return REPO_ROOT / str(config["main"])


def exported_names(module: Path) -> set[str]:
    """Top-level names a module binds: classes, functions, assignments and imports."""
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def durable_object_classes(config: dict[str, Any]) -> list[str]:
    return [binding["class_name"] for binding in config["durable_objects"]["bindings"]]


def sqlite_classes(config: dict[str, Any]) -> list[str]:
    return [name for migration in config["migrations"] for name in migration.get("new_sqlite_classes", [])]
