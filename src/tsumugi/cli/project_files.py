"""Writing scaffold files without overwriting what exists (ADR-0036) unless ``--force``."""
# C-12

from __future__ import annotations

from pathlib import Path


class ProjectFiles:
    """Writes files under ``root``, printing ``created``/``skipped`` lines with ``shown`` as the prefix."""

    def __init__(self, root: Path, shown: str, *, force: bool) -> None:
        self.root = root
        self._shown = shown
        self._force = force

    def display(self, relative: str) -> str:
        """How a path is named in messages: relative to where the command ran."""
        return relative if self._shown in ("", ".") else f"{self._shown.rstrip('/')}/{relative}"

    def write(self, relative: str, content: str) -> bool:
        """Write ``relative`` unless it exists (then log ``skipped``); True when written."""
        path = self.root / relative
        existed = path.exists()
        if existed and not self._force:
            print(f"skipped {self.display(relative)} (already exists)")
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"{'overwrote' if existed else 'created'} {self.display(relative)}")
        return True
