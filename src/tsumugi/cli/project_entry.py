"""What ``tsumugi doctor`` reads from the entry module without importing it (``ast``; ADR-0088).

Importing the entry would need the Workers runtime; the syntax tree tells which names the module
binds at top level (the exports Workers looks up) and what ``define_tsumugi(...)`` is given.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from tsumugi.errors import CommandLineError


@dataclass(frozen=True)
class EntryFacts:
    """Top-level names of the entry, and whether its definition has flows, schedules, remote performers."""

    exports: frozenset[str]
    flows: bool = False
    schedules: bool = False
    remote_bindings: tuple[str, ...] = field(default=())


def read_entry(path: Path) -> EntryFacts:
    """Parse ``path``; a missing or unparsable entry is a ``CommandLineError``."""
    tree = _parse(path)
    exports = frozenset(name for statement in tree.body for name in _bound_names(statement))
    call = _definition_call(tree) or _sibling_definition_call(tree, path.parent)
    if call is None:
        return EntryFacts(exports)
    options = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
    return EntryFacts(
        exports,
        flows=_non_empty(options.get("flows")),
        schedules=_non_empty(options.get("schedules")),
        remote_bindings=_remote_bindings(options.get("performers")),
    )


def _bound_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return [statement.name]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [alias.asname or alias.name.split(".")[0] for alias in statement.names if alias.name != "*"]
    if isinstance(statement, ast.Assign):
        return [target.id for target in statement.targets if isinstance(target, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def _parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise CommandLineError(f"cannot read the entry module {path}: {exc}") from exc


def _sibling_definition_call(tree: ast.Module, folder: Path) -> ast.Call | None:
    """The ``define_tsumugi`` call of a module the entry imports from its own folder (``from app import``)."""
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            sibling = folder / f"{statement.module.replace('.', '/')}.py"
            if sibling.is_file():
                call = _definition_call(_parse(sibling))
                if call is not None:
                    return call
    return None


def _definition_call(tree: ast.Module) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node.func) == "define_tsumugi":
            return node
    return None


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _non_empty(value: ast.expr | None) -> bool:
    """Anything but an absent, ``None`` or empty literal counts as defining flows/schedules."""
    if value is None:
        return False
    if isinstance(value, ast.Constant):
        return bool(value.value)
    if isinstance(value, ast.Dict):
        return bool(value.keys)
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return bool(value.elts)
    return True


def _remote_bindings(performers: ast.expr | None) -> tuple[str, ...]:
    """Keys of a literal ``performers`` dict whose value is a ``remote(...)`` call."""
    #
    if not isinstance(performers, ast.Dict):
        return ()
    return tuple(
        key.value
        for key, value in zip(performers.keys, performers.values, strict=True)
        if isinstance(key, ast.Constant)
        and isinstance(key.value, str)
        and isinstance(value, ast.Call)
        and _called_name(value.func) == "remote"
    )
