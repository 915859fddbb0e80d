"""The REST clients' answers read in Python spellings (issue 14, ADR-0146): snake_case and decoded JSON text.

The wire fields stay as they are (``byState``, ``payload`` as JSON text), so existing code keeps working.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.api.rest_harness import TOKEN, Harness
from tests.api.served import app_of, seeded_harness, serve

from tsumugi import AsyncTsumugiClient, TsumugiClient


@pytest.fixture
async def served(tmp_path: Path) -> Iterator[tuple[str, Harness]]:
    harness = await seeded_harness(str(tmp_path / "read-model.sqlite"))
    with serve(app_of(harness)) as base_url:
        yield base_url, harness


def test_stats_and_metrics_have_snake_case_names(served: tuple[str, Harness]) -> None:
    base_url, _ = served
    with TsumugiClient(base_url, TOKEN) as api:
        stats = api.stats()
        assert stats.by_state == stats.byState == {"COMPLETED": 1, "FAILED": 1, "SCHEDULED": 1}
        assert stats.oldest_scheduled_ms == stats.oldestScheduledMs
        metrics = api.metrics(hours=2).bindings[0]
        assert (metrics.failure_rate, metrics.avg_duration_ms, metrics.max_duration_ms) == (
            metrics.failureRate,
            metrics.avgDurationMs,
            metrics.maxDurationMs,
        )
        assert (metrics.p95_duration_ms, metrics.avg_attempts) == (metrics.p95DurationMs, metrics.avgAttempts)
        blocked = api.diagnostics().bindings["MAIL"].blocked
        assert blocked.per_key is blocked.perKey
        # the wire shape is unchanged: what --json prints and the OpenAPI document describe
        assert set(stats.model_dump()) == {"byState", "oldestScheduledMs"}


async def test_payload_and_result_come_decoded(served: tuple[str, Harness]) -> None:
    base_url, _ = served
    async with AsyncTsumugiClient(base_url, TOKEN) as api:
        job = await api.get_job("MAIL#0:a1")
        assert job.payload == '{"to":"a@example.com"}'  # the JSON text, as the API sends it
        assert job.decoded_payload == {"to": "a@example.com"}
        assert job.result is None and job.decoded_result is None
        assert "decoded_payload" not in job.model_dump()
