"""The simulator's errors: one for a simulation that cannot go on, one for a failure it found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tsumugi.errors import TsumugiError

if TYPE_CHECKING:
    from tsumugi.testing.chaos.explore import ChaosFailure

__all__ = ["ChaosError", "ChaosFailureError"]


class ChaosError(TsumugiError):
    """The simulation itself could not go on (a runtime that never goes quiet, too many steps)."""


class ChaosFailureError(TsumugiError, AssertionError):
    """``check`` found a schedule that breaks a guarantee or an invariant; pytest shows it as a failure."""

    def __init__(self, failure: ChaosFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure
