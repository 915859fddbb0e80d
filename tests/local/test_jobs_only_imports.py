"""A process that only runs jobs never loads what runs and schedules need (ADR-0176): a worker starts
faster, and an app that defines neither pays nothing for them."""

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
    )
    print(",".join(name for name in unwanted if name in sys.modules))
    """


def test_running_plain_jobs_loads_no_run_or_schedule_modules(tmp_path: Path) -> None:
    done = run_one_job_then(UNWANTED, tmp_path / "state")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
