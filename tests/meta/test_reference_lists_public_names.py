"""The API reference renders every public name, each where it is defined (STYLE.md habit 9)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import tsumugi
import tsumugi.errors

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "reference.md"
IDENTIFIER = re.compile(r"^::: (\S+)", re.MULTILINE)


def _identifiers() -> list[str]:
    return IDENTIFIER.findall(REFERENCE.read_text(encoding="utf-8"))


def _resolve(identifier: str) -> object:
    try:
        return importlib.import_module(identifier)
    except ModuleNotFoundError:
        module, _, name = identifier.rpartition(".")
        return getattr(importlib.import_module(module), name)


def test_every_public_name_is_in_the_reference() -> None:
    listed = {id(_resolve(identifier)) for identifier in _identifiers()}
    documented_with_errors = "tsumugi.errors" in _identifiers()
    missing = [
        name
        for name in tsumugi.__all__
        if id(getattr(tsumugi, name)) not in listed
        and not (documented_with_errors and getattr(tsumugi.errors, name, None) is getattr(tsumugi, name))
    ]
    assert missing == []


def test_every_entry_names_the_module_that_defines_it() -> None:
    # A re-export renders too, but the page says names are listed where they are defined.
    moved = []
    for identifier in _identifiers():
        found = _resolve(identifier)
        defined_in = getattr(found, "__module__", None)
        module = identifier.rpartition(".")[0]
        if (inspect.isclass(found) or inspect.isfunction(found)) and defined_in != module:
            moved.append(f"{identifier} is defined in {defined_in}")
    assert moved == []
