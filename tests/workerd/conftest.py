"""One pair of real Workers for the whole workerd suite, started by ``scripts/workerd-dev``.

The suite needs Python Workers in workerd: the offline Pyodide bundle tool beside the repository, or the
internet. Where neither exists the suite skips, saying so; ``TSUMUGI_REQUIRE_WORKERD=1`` (set by
``.ci/run``) turns that skip into a failure, so CI can never pass without running it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from tests.workerd.harness import Workers, why_workerd_cannot_run

pytestmark = pytest.mark.workerd


@pytest.fixture(scope="session")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    reason = why_workerd_cannot_run()
    if reason is not None:
        if os.environ.get("TSUMUGI_REQUIRE_WORKERD") == "1":
            pytest.fail(f"the workerd suite must run here (TSUMUGI_REQUIRE_WORKERD=1), but {reason}")
        pytest.skip(f"Python Workers cannot run in workerd here: {reason}")
    state = tmp_path_factory.mktemp("workerd-state")
    started = Workers(state, state / "workerd-dev.log")
    try:
        yield started
    finally:
        started.close()
