"""One pair of real Workers for the whole workerd suite, started by ``scripts/workerd-dev``.

The suite needs Python Workers in workerd: the offline Pyodide bundle tool beside the repository, or the
internet. Where neither exists the suite skips, saying so; ``TSUMUGI_REQUIRE_WORKERD=1`` (set by
``.ci/run``) turns that skip into a failure, so CI can never pass without running it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.workerd.harness import Workers, skip_unless_workerd

pytestmark = pytest.mark.workerd


@pytest.fixture(scope="session")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    skip_unless_workerd()
    state = tmp_path_factory.mktemp("workerd-state")
    started = Workers(state, state / "workerd-dev.log")
    try:
        yield started
    finally:
        started.close()
