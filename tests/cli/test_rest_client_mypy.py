"""``mypy --strict`` sees the REST client's typed answers and refuses misspelt or mistyped options (ADR-0156).

Runs the real type checker on a small caller; each line marked ``# BAD: <what>`` must be reported, and
nothing else may be (``assert_type`` fails on a wrong answer type).
"""

from __future__ import annotations

from pathlib import Path

from tests.mypy_marked import errors_by_mark

CALLER = """
from __future__ import annotations

from typing_extensions import assert_type

from tsumugi.rest_answers import BulkCount, BulkProgress, EventAnswer, JobAnswer, MutationAnswer
from tsumugi.rest_client import AsyncTsumugiClient, TsumugiClient


def fine(api: TsumugiClient) -> None:
    assert_type(api.create_job("A", {"n": 1}, unique_key="u"), str)
    assert_type(api.create_job("A", 1, debounce_key="k", debounce_ms=1_000), JobAnswer)
    throttled = api.create_job("A", 1, throttle_key="t", throttle={"tokens": 1, "intervalMs": 10})
    assert_type(throttled, JobAnswer)
    assert_type(api.retry_job("A#0:x"), MutationAnswer)
    assert_type(api.send_event("f:r", "go"), EventAnswer)
    assert_type(api.start_bulk(action="retry", dryRun=True), BulkCount)
    assert_type(api.start_bulk(action="cancel", filter={"binding": "A"}, includeRunning=True), BulkProgress)
    api.list_jobs(state="FAILED", limit=5, order="asc")
    api.update_policy("A", paused=True, rate={"tokens": 1, "intervalMs": 10})


async def fine_async(api: AsyncTsumugiClient) -> None:
    assert_type(await api.create_job("A", 1), str)
    assert_type(await api.create_job("A", 1, throttle_key="t"), JobAnswer)


def wrong(api: TsumugiClient) -> None:
    api.list_jobs(stat="FAILED")  # BAD: misspelt query
    api.create_job("A", 1, debounce_ms=10)  # BAD: debounce_ms without a key
    api.start_bulk(action="retire")  # BAD: unknown action
    api.update_policy("A", paused="yes")  # BAD: option type
    api.create_job("A", 1, throttle_key="t", throttle={"tokens": 1})  # BAD: incomplete throttle
"""


def test_mypy_strict_reports_exactly_the_bad_calls(tmp_path: Path) -> None:
    by_line = errors_by_mark(tmp_path, "rest_caller.py", CALLER)
    assert 'Unexpected keyword argument "stat"' in by_line["misspelt query"]
    assert 'did you mean "state"' in by_line["misspelt query"]
    assert 'incompatible type "str"; expected "bool"' in by_line["option type"]
