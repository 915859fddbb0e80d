"""Local ids that replay: a counter stands in for the OS generator while a simulation runs (ADR-0142).

``tsumugi.core.wire_format.new_local_ids`` stamps ids with the wall clock and fills them with random
bytes from the OS.
Jobs created in the same millisecond are dispatched in id order, so with random ids the same
seed would deliver them in another order, and a fault aimed at "the second delivery" would hit
another job. Every id the engine makes goes through that one function (``new_local_id`` calls it), so
replacing it for the simulation's duration is enough; ids keep the cuid2 shape.
"""
# J-142, J-15

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from tsumugi.core import wire_format

__all__ = ["replayable_ids"]

_WIDTH = wire_format.LOCAL_ID_LENGTH - 1  # a letter first (J-15), then zero-padded digits


@contextmanager
def replayable_ids() -> Iterator[None]:
    """Make every new local id ``c000...0001``, ``c000...0002``, ... until the block ends."""
    numbers = itertools.count(1)

    def new_local_ids(count: int) -> list[str]:
        return [f"c{next(numbers):0{_WIDTH}d}" for _ in range(count)]

    original = wire_format.new_local_ids
    wire_format.new_local_ids = new_local_ids
    try:
        yield
    finally:
        wire_format.new_local_ids = original
