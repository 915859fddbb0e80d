"""A process that only runs jobs never loads what runs and schedules need (ADR-0176), nor what flows,
debounce and throttle keys, Analytics Engine metrics, telemetry and configuration reports need
(ADR-0178): a worker starts faster, and an app that uses none of them pays nothing for them."""

from __future__ import annotations

from pathlib import Path

from tests.one_job import run_one_job_then

UNWANTED = """
    unwanted = (
        "tsumugi.coordinator.run_context",
        "tsumugi.coordinator.scheduler_context",
        "tsumugi.storage.run_store",
        "tsumugi.storage.run_outbox",
        "tsumugi.storage.schedule_store",
        "tsumugi.core.schedules",
        "tsumugi.core.cron",
        "tsumugi.core.flow.model",
        "tsumugi.core.flow.validation",
        "tsumugi.core.enqueue_keys",
        "tsumugi.coordinator.shard_enqueue_keys",
        "tsumugi.core.wrangler_fragments",
        "tsumugi.projection.analytics_engine",
        "tsumugi.telemetry.hooks",
    )
    print(",".join(name for name in unwanted if name in sys.modules))
    """


def test_running_plain_jobs_loads_none_of_the_features_it_does_not_use(tmp_path: Path) -> None:
    done = run_one_job_then(UNWANTED, tmp_path / "state")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
