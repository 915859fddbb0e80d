"""Tsumugi: a durable job system for the Cloudflare stack, with an embedded local runtime.

The public surface is listed in ``__all__`` (pinned by ``tests/meta/test_public_surface.py``). Names load
lazily so that ``import tsumugi.performer`` in a performer-only Worker stays light (jobs.md 10.8).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tsumugi.api.auth_access import access_auth
    from tsumugi.api.auth_bearer import bearer_auth
    from tsumugi.application import Tsumugi, define_tsumugi
    from tsumugi.application.flow_runs import send_event
    from tsumugi.client import create_client, enqueue, enqueue_many, shard_for
    from tsumugi.clock import FixedClock, SystemClock
    from tsumugi.core.config import (
        BindingConfig,
        ExponentialBackoff,
        FixedBackoff,
        OnSettled,
        Policy,
        Rate,
        RunSettings,
        SweepOptions,
    )
    from tsumugi.core.cron import next_cron_at, parse_cron
    from tsumugi.core.flow.model import Flow
    from tsumugi.core.ids import (
        format_job_id,
        hash_to_shard,
        parse_job_id,
        resolve_shard,
        shard_name,
        shard_name_of,
    )
    from tsumugi.core.options import EnqueueInput, EnqueueOptions
    from tsumugi.core.schedules import ScheduleContext, next_occurrence, normalize_schedules
    from tsumugi.core.states import JobState
    from tsumugi.errors import (
        ConfigurationError,
        EnqueueError,
        InvalidConfigError,
        InvalidCronError,
        InvalidFlowError,
        InvalidJobIdError,
        InvalidPayloadError,
        InvalidPerformerError,
        InvalidRunIdError,
        InvalidScheduleError,
        InvalidTransitionError,
        MissingBindingsError,
        PermanentFailure,
        RequiredKeyError,
        ResultNotJsonError,
        RetryAfter,
        TsumugiError,
        TsumugiTimeoutError,
    )
    from tsumugi.flows import create_flow
    from tsumugi.performer import HeartbeatResult, JobContext, Performer, remote

_ORIGINS: dict[str, str] = {
    "access_auth": "tsumugi.api.auth_access",
    "bearer_auth": "tsumugi.api.auth_bearer",
    "Tsumugi": "tsumugi.application",
    "define_tsumugi": "tsumugi.application",
    "send_event": "tsumugi.application.flow_runs",
    "create_client": "tsumugi.client",
    "enqueue": "tsumugi.client",
    "enqueue_many": "tsumugi.client",
    "shard_for": "tsumugi.client",
    "FixedClock": "tsumugi.clock",
    "SystemClock": "tsumugi.clock",
    "Flow": "tsumugi.core.flow.model",
    "ScheduleContext": "tsumugi.core.schedules",
    "next_occurrence": "tsumugi.core.schedules",
    "normalize_schedules": "tsumugi.core.schedules",
    "next_cron_at": "tsumugi.core.cron",
    "parse_cron": "tsumugi.core.cron",
    "JobState": "tsumugi.core.states",
    "EnqueueInput": "tsumugi.core.options",
    "EnqueueOptions": "tsumugi.core.options",
    "create_flow": "tsumugi.flows",
    **dict.fromkeys(
        (
            "BindingConfig",
            "ExponentialBackoff",
            "FixedBackoff",
            "OnSettled",
            "Policy",
            "Rate",
            "RunSettings",
            "SweepOptions",
        ),
        "tsumugi.core.config",
    ),
    **dict.fromkeys(
        ("format_job_id", "hash_to_shard", "parse_job_id", "resolve_shard", "shard_name", "shard_name_of"),
        "tsumugi.core.ids",
    ),
    **dict.fromkeys(
        (
            "ConfigurationError",
            "EnqueueError",
            "InvalidConfigError",
            "InvalidCronError",
            "InvalidFlowError",
            "InvalidJobIdError",
            "InvalidPayloadError",
            "InvalidPerformerError",
            "InvalidRunIdError",
            "InvalidScheduleError",
            "InvalidTransitionError",
            "MissingBindingsError",
            "PermanentFailure",
            "RequiredKeyError",
            "ResultNotJsonError",
            "RetryAfter",
            "TsumugiError",
            "TsumugiTimeoutError",
        ),
        "tsumugi.errors",
    ),
    **dict.fromkeys(("HeartbeatResult", "JobContext", "Performer", "remote"), "tsumugi.performer"),
}

__all__ = [
    "BindingConfig",
    "ConfigurationError",
    "EnqueueError",
    "EnqueueInput",
    "EnqueueOptions",
    "ExponentialBackoff",
    "FixedBackoff",
    "FixedClock",
    "Flow",
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
    "JobState",
    "MissingBindingsError",
    "OnSettled",
    "Performer",
    "PermanentFailure",
    "Policy",
    "Rate",
    "RequiredKeyError",
    "ResultNotJsonError",
    "RetryAfter",
    "RunSettings",
    "ScheduleContext",
    "SweepOptions",
    "SystemClock",
    "Tsumugi",
    "TsumugiError",
    "TsumugiTimeoutError",
    "access_auth",
    "bearer_auth",
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


def __getattr__(name: str) -> Any:
    origin = _ORIGINS.get(name)
    if origin is None:
        raise AttributeError(f"module 'tsumugi' has no attribute {name!r}")
    value = getattr(import_module(origin), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
