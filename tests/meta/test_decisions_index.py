"""The ADR index lists every decision record, and every record is well formed (STYLE.md habit 7)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_index_is_current() -> None:
    expected = runpy.run_path(str(ROOT / "scripts" / "adr-index"), run_name="adr_index")["render"]()
    assert (ROOT / "docs" / "decisions" / "README.md").read_text(encoding="utf-8") == expected, (
        "docs/decisions/README.md is stale: run scripts/adr-index"
    )


def test_numbers_are_unique_and_sections_present() -> None:
    paths = sorted((ROOT / "docs" / "decisions").glob("[0-9][0-9][0-9][0-9]-*.md"))
    numbers = [p.name[:4] for p in paths]
    assert len(numbers) == len(set(numbers)), "two ADRs share a number"
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for section in ("## Context", "## Decision", "## Consequences"):
            assert re.search(f"^{section}", text, re.M), f"{path.name} lacks {section}"
