"""The REST client's debounce and throttle options, against the real engine served on 127.0.0.1."""
# ADR-0149, ADR-0150

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.api.rest_harness import TOKEN
from tests.api.served import serve_runtime

from tsumugi.api import models
from tsumugi.rest_client import AsyncTsumugiClient, RestApiError, TsumugiClient

AN_HOUR_MS = 3_600_000  # far enough that no debounced job runs, and no throttle slot frees, in the test


@pytest.fixture
def base_url(tmp_path: Path) -> Iterator[str]:
    with serve_runtime(tmp_path / "state") as url:
        yield url


def test_a_debounced_second_create_answers_with_the_first_jobs_id(base_url: str) -> None:
    with TsumugiClient(base_url, TOKEN) as api:
        first = api.create_job("MAIL", {"n": 1}, debounce_key="user-7", debounce_ms=AN_HOUR_MS)
        assert isinstance(first, models.Created)
        second = api.create_job("MAIL", {"n": 2}, debounce_key="user-7", debounce_ms=AN_HOUR_MS)
        assert isinstance(second, models.Debounced)
        assert (second.id, second.debounced) == (first.id, True)
        assert second.runAfter is not None and second.runAfter > 0
        other = api.create_job("MAIL", {"n": 3}, debounce_key="user-8", debounce_ms=AN_HOUR_MS)
        assert isinstance(other, models.Created) and other.id != first.id
        # a create without a key still answers with the bare id
        assert api.create_job("MAIL", {"n": 4}).startswith("MAIL#")


def test_a_throttle_that_drops_says_no_job_was_made(base_url: str) -> None:
    rule = models.ThrottleRequest(tokens=1, intervalMs=AN_HOUR_MS, onExcess="drop")
    with TsumugiClient(base_url, TOKEN) as api:
        first = api.create_job("MAIL", 1, throttle_key="tenant-a", throttle=rule)
        assert isinstance(first, models.Created) and first.id.startswith("MAIL#")
        second = api.create_job("MAIL", 2, throttle_key="tenant-a", throttle=rule)
        assert isinstance(second, models.Dropped)
        assert (second.id, second.dropped) == (None, True)
        assert second.runAfter is not None and second.runAfter > 0
        elsewhere = api.create_job(
            "MAIL", 3, throttle_key="tenant-b", throttle={"tokens": 1, "intervalMs": AN_HOUR_MS}
        )
        assert isinstance(elsewhere, models.Created)


def test_refused_combinations_raise_the_servers_message(base_url: str) -> None:
    with TsumugiClient(base_url, TOKEN) as api, pytest.raises(RestApiError) as refused:
        api.create_job("MAIL", 1, throttle_key="k", throttle={"tokens": 0, "intervalMs": 10})
    assert refused.value.status == 400 and "tokens" in refused.value.message


async def test_the_async_client_debounces_and_drops_too(base_url: str) -> None:
    async with AsyncTsumugiClient(base_url, TOKEN) as api:
        first = await api.create_job(
            "SMS", "a", debounce_key="k", debounce_ms=AN_HOUR_MS, debounce_max_ms=AN_HOUR_MS
        )
        second = await api.create_job("SMS", "b", debounce_key="k", debounce_ms=AN_HOUR_MS)
        assert isinstance(first, models.Created) and isinstance(second, models.Debounced)
        assert second.id == first.id
        drop = models.ThrottleRequest(tokens=1, intervalMs=AN_HOUR_MS, onExcess="drop")
        kept = await api.create_job("SMS", 1, throttle_key="t", throttle=drop)
        dropped = await api.create_job("SMS", 2, throttle_key="t", throttle=drop)
        assert isinstance(kept, models.Created)
        assert isinstance(dropped, models.Dropped) and dropped.id is None
