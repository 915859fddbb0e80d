"""A shard's meter, read over the companion Worker: the real Durable Object cursors' rows and alarms.

``GET /meter?shard=<binding>#<n>`` answers the shard object's ``meter()`` RPC (COST.md: the sum of every
cursor's ``rowsRead``/``rowsWritten`` and the ``setAlarm`` calls since the instance started).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.workerd.harness import Workers, quoted, request

pytestmark = pytest.mark.workerd

SHARD = "Report#0"  # a binding only the flows use besides this test, so few neighbours share the meter
# A job writes its row with its indexes, a fresh mark, a dispatch, an attempt and its completion: never
# fewer than 5 rows. A job on an idle shard measured 10 rows written (and 5 setAlarm) and about 100 read;
# the bounds leave room for a neighbour's job or sweep in the same window, not for a per-job table scan.
MIN_WRITTEN_PER_JOB = 5
MAX_WRITTEN_PER_JOB = 60
MAX_READ_PER_JOB = 1000


def meter(workers: Workers, shard: str = SHARD) -> dict[str, Any]:
    answer = request(f"{workers.companion_url}/meter?shard={quoted(shard)}")
    assert answer.status == 200, answer
    found: dict[str, Any] = answer.body
    return found


def run_jobs(workers: Workers, count: int) -> None:
    for n in range(count):
        job_id = workers.enqueue("Report", {"total": n, "failed": 0})
        assert workers.wait_job(job_id)["state"] == "COMPLETED"


def test_the_meter_counts_the_rows_and_alarms_of_a_shards_jobs(workers: Workers) -> None:
    before = meter(workers)
    assert set(before) == {"rowsRead", "rowsWritten", "alarmSets", "startedAt"}
    run_jobs(workers, 1)
    after_one = meter(workers)
    run_jobs(workers, 4)
    after_five = meter(workers)
    # Jobs keep the object busy, so one instance served them all; an evicted one would restart its counts.
    assert before["startedAt"] == after_one["startedAt"] == after_five["startedAt"]
    for field in ("rowsRead", "rowsWritten", "alarmSets"):
        assert before[field] < after_one[field] < after_five[field], field
    written = (after_five["rowsWritten"] - after_one["rowsWritten"]) / 4
    read = (after_five["rowsRead"] - after_one["rowsRead"]) / 4
    assert MIN_WRITTEN_PER_JOB <= written <= MAX_WRITTEN_PER_JOB, (written, before, after_five)
    assert 0 < read <= MAX_READ_PER_JOB, (read, before, after_five)


def test_the_meter_refuses_what_is_not_a_shard_of_the_example(workers: Workers) -> None:
    for shard in ("Report#1", "Nope#0", "Report", "Report#x", ""):
        answer = request(f"{workers.companion_url}/meter?shard={quoted(shard)}")
        assert answer.status == 400, (shard, answer)
    unauthorized = request(f"{workers.companion_url}/meter?shard={quoted(SHARD)}", token="wrong")
    assert unauthorized.status == 401
