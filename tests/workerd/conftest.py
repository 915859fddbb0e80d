"""One pair of real Workers for the whole workerd suite, started by ``scripts/workerd-dev``.

The suite needs Python Workers in workerd: the offline Pyodide bundle tool beside the repository, or the
internet. Where neither exists the suite skips, saying so; ``TSUMUGI_REQUIRE_WORKERD=1`` (set by
``.ci/run``) turns that skip into a failure, so CI can never pass without running it.

The ``test_rest_*`` modules share one seeded data set on those Workers (rest_seed.py), created once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.workerd.harness import Workers, skip_unless_workerd
from tests.workerd.rest_seed import ListGroup, Seeded, seed
from tests.workerd.rest_wire import call, listed

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


@pytest.fixture(scope="session")
def seeded(workers: Workers) -> Iterator[Seeded]:
    """The REST modules' data, enqueued once for all of them; the first test of test_rest_auth.py asks."""
    data = seed(workers)
    yield data
    call(workers, "POST", "/api/jobs/bulk-cancel", {"ids": data.delayed})  # leave nothing waiting


@pytest.fixture(scope="session")
def list_group(workers: Workers, seeded: Seeded) -> ListGroup:
    for job_id in seeded.list_ids:
        workers.wait_job(job_id, frozenset({"SCHEDULED"}))  # listed once projected
    rows = {r["id"]: r for r in listed(workers, f"concurrency_key={seeded.list_key}&limit=100")["jobs"]}
    return ListGroup([rows[job_id] for job_id in seeded.list_ids])
