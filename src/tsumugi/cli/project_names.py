"""Names the scaffolder derives: performer class and module from a raw name, the worker name."""
# C-13, C-7

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Final

from tsumugi.errors import CommandLineError

_SEPARATORS: Final = re.compile(r"[-_\s]+")
# C-13: acronym runs end before a capitalised word (HTTPFetch -> HTTP + Fetch); anything that is not a
# letter or digit becomes its own word so the class-name check below rejects it.
_WORDS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+|[^A-Za-z0-9]+")
_CLASS_NAME: Final = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_WORKER_NAME: Final = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")  # a Workers script name


@dataclass(frozen=True)
class PerformerNames:
    """``class_name`` (PascalCase) and ``module`` (snake_case, ADR-0087) of one performer."""

    class_name: str
    module: str


def split_words(raw: str) -> list[str]:
    """Words of ``raw``: split on ``-``, ``_``, whitespace and camel/Pascal boundaries."""
    # C-13
    return [word for chunk in _SEPARATORS.split(raw) for word in _WORDS.findall(chunk)]


def performer_names(raw: str) -> PerformerNames:
    """``send-mail``, ``sendMail``, ``SendMail``, ``SEND_MAIL`` give ``SendMail``/``send_mail``."""
    # C-13
    words = split_words(raw)
    class_name = "".join(word[:1].upper() + word[1:].lower() for word in words)
    module = "_".join(word.lower() for word in words)
    if not _CLASS_NAME.match(class_name):
        raise CommandLineError(
            f'cannot derive a class name from "{raw}"\n'
            "use letters and digits, starting with a letter, e.g. send-mail or SendMail"
        )
    # A Python port's own limit: the module is imported by name (`from .<module> import <Class>`).
    reserved = [name for name in (class_name, module) if keyword.iskeyword(name)]
    if reserved:
        raise CommandLineError(
            f'cannot derive a class name from "{raw}"\n'
            f'"{reserved[0]}" is a Python keyword, choose another name'
        )
    return PerformerNames(class_name, module)


def check_worker_name(name: str) -> str:
    """``--name`` must be a valid Worker name: lowercase letters, digits and dashes (ADR-0086)."""
    if not _WORKER_NAME.match(name):
        raise CommandLineError(
            f'invalid worker name "{name}": use lowercase letters, digits and dashes (at most 63)'
        )
    return name


def worker_name_from(text: str) -> str:
    """A Worker name made from a directory or package name: ``My_Project`` -> ``my-project``."""
    words = [word.lower() for word in split_words(text) if word.isalnum()]
    name = "-".join(words)[:63].strip("-")
    return name or "tsumugi-worker"
