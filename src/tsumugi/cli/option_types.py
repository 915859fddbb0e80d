"""Argument types of the operator commands: instants, states, JSON payloads, counts."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TextIO

MS_PER_S = 1000


def epoch_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 date-time (``2026-05-01T12:00:00Z``; no offset means UTC)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither epoch milliseconds nor an ISO 8601 date-time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * MS_PER_S)


def non_negative(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def positive(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def one_of(states: Sequence[str]) -> Callable[[str], str]:
    """A state name, in any case, among ``states``."""

    def state(text: str) -> str:
        name = text.upper()
        if name not in states:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(states)}")
        return name

    return state


def payload(text: str, stdin: TextIO | None = None) -> object:
    """PAYLOAD as JSON text, or ``-`` to read the JSON from standard input."""
    source = (stdin or sys.stdin).read() if text == "-" else text
    try:
        return json.loads(source)
    except ValueError as error:
        where = "standard input" if text == "-" else "PAYLOAD"
        raise ValueError(f"{where} is not JSON: {error}") from None


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
