"""The ``chaos`` fixture: ``pytest_plugins = ["tsumugi.testing.chaos.pytest_plugin"]`` in a conftest.

Each simulation's files live in a scratch directory of their own, memory-backed where the system has
one, and are gone once it ends: a failure is replayed from its schedule, not from its files.
"""

from __future__ import annotations

import pytest

from tsumugi.testing.chaos.explore import Chaos

__all__ = ["chaos"]


@pytest.fixture
def chaos() -> Chaos:
    """``await chaos.check(app, scenario, invariants=[...])``, ``find_failure``, ``simulate``."""
    return Chaos()
