"""Where a value does not fit its type: ``(path, problem)`` pairs gathered while the value is walked.

``wire_format.to_json`` raises a ``Mismatch`` for the first part of a value that is not JSON; the payload
type checks (``tsumugi.payloads``) raise one listing every field that does not fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from tsumugi.errors import TsumugiError

__all__ = ["Issue", "Mismatch", "format_path", "summary"]

Segment = str | int
Issue = tuple[tuple[Segment, ...], str]
MAX_LISTED: Final = 10  # a message names this many problems, then counts the rest


class Mismatch(TsumugiError):
    """A value does not fit a type. Internal: callers turn it into the error the user sees."""

    def __init__(self, issues: Iterable[Issue]) -> None:
        self.issues = list(issues)
        super().__init__(summary(self.issues))

    @classmethod
    def at_root(cls, problem: str) -> Mismatch:
        return cls([((), problem)])

    def under(self, segment: Segment) -> Mismatch:
        """The same problems, one level deeper (``segment`` is a field name or a list index)."""
        return Mismatch(((segment, *path), problem) for path, problem in self.issues)

    def described(self, root: str) -> tuple[tuple[str, str], ...]:
        return tuple((format_path(path, root), problem) for path, problem in self.issues)


def format_path(path: tuple[Segment, ...], root: str) -> str:
    """``("items", 0, "name")`` -> ``items[0].name``; the empty path is ``root`` itself."""
    text = ""
    for segment in path:
        if isinstance(segment, int):
            text += f"[{segment}]"
        else:
            text += f".{segment}" if text else segment
    if not text:
        return root
    return f"{root}{text}" if text.startswith("[") else text


def summary(issues: list[Issue], root: str = "payload") -> str:
    """``to: field required; count: expected int, got str`` (at most MAX_LISTED, then a count)."""
    shown = [f"{format_path(path, root)}: {problem}" for path, problem in issues[:MAX_LISTED]]
    if len(issues) > MAX_LISTED:
        shown.append(f"and {len(issues) - MAX_LISTED} more")
    return "; ".join(shown)
