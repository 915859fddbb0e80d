"""The public surface is explicit, alphabetised and pinned (STYLE.md habit 9)."""

from __future__ import annotations

import subprocess
import sys

import tsumugi

EXPECTED = [
    "AsyncTsumugiClient",
    "BindingConfig",
    "ConfigurationError",
    "EnqueueError",
    "EnqueueInput",
    "EnqueueOptions",
    "EnqueueOutcome",
    "ExponentialBackoff",
    "FixedBackoff",
    "FixedClock",
    "Flow",
    "FlowBuilder",
    "HeartbeatResult",
    "InvalidConfigError",
    "InvalidCronError",
    "InvalidFlowError",
    "InvalidJobIdError",
    "InvalidPayloadError",
    "InvalidPerformerError",
    "InvalidRunIdError",
    "InvalidScheduleError",
    "InvalidTransitionError",
    "JobContext",
    "JobDroppedError",
    "JobState",
    "LocalRuntime",
    "MissingBindingsError",
    "OnSettled",
    "Performer",
    "PermanentFailure",
    "Policy",
    "Rate",
    "RequiredKeyError",
    "RestApiError",
    "ResultNotJsonError",
    "RetryAfter",
    "RunSettings",
    "ScheduleContext",
    "SweepOptions",
    "SystemClock",
    "Tsumugi",
    "TsumugiClient",
    "TsumugiError",
    "TsumugiTimeoutError",
    "access_auth",
    "bearer_auth",
    "configure_logging",
    "create_client",
    "create_flow",
    "define_tsumugi",
    "enqueue",
    "enqueue_many",
    "format_job_id",
    "hash_to_shard",
    "next_cron_at",
    "next_occurrence",
    "normalize_schedules",
    "parse_cron",
    "parse_job_id",
    "remote",
    "resolve_shard",
    "send_event",
    "shard_for",
    "shard_name",
    "shard_name_of",
]


def test_all_is_pinned_and_sorted() -> None:
    assert tsumugi.__all__ == EXPECTED
    assert sorted(tsumugi.__all__, key=str) == tsumugi.__all__


def test_every_public_name_resolves() -> None:
    for name in tsumugi.__all__:
        assert getattr(tsumugi, name) is not None, name


def test_errors_derive_from_the_root() -> None:
    for name in tsumugi.__all__:
        value = getattr(tsumugi, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, tsumugi.TsumugiError), name


def test_performer_module_stays_light() -> None:
    # jobs.md 10.8: a performer-only Worker must not load the shard, SQL or HTTP code
    code = (
        "import sys, tsumugi.performer; "
        "heavy = [m for m in ('tsumugi.coordinator', 'tsumugi.storage', 'tsumugi.api', 'starlette', "
        "'sqlite3') if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
