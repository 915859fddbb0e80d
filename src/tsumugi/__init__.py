"""Tsumugi: a durable job system for the Cloudflare stack, with an embedded local runtime.

Everything an app needs imports from here: ``define_tsumugi``, ``Performer`` and ``JobContext``,
``create_flow`` and ``FlowBuilder``, ``bearer_auth``, the REST clients (``TsumugiClient``,
``AsyncTsumugiClient``) and the local runtime (``LocalRuntime``). Test helpers are in ``tsumugi.testing``
and log formatting in ``tsumugi.logging``. Names load on first use, so ``import tsumugi.performer`` in a
performer-only Worker stays light.
"""

# jobs.md 10.8: a performer-only Worker loads no shard, SQL or HTTP code. __all__ is pinned by
# tests/meta/test_public_surface.py.

from __future__ import annotations

from typing import TYPE_CHECKING

from tsumugi.lazy_exports import lazy_exports

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
    from tsumugi.core.enqueue_outcome import EnqueueOutcome
    from tsumugi.core.flow.model import Flow
    from tsumugi.core.options import EnqueueInput, EnqueueOptions
    from tsumugi.core.schedules import ScheduleContext, next_occurrence, normalize_schedules
    from tsumugi.core.states import JobState
    from tsumugi.core.wire_format import (
        format_job_id,
        hash_to_shard,
        parse_job_id,
        resolve_shard,
        shard_name,
        shard_name_of,
    )
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
        JobDroppedError,
        MissingBindingsError,
        PermanentFailure,
        RequiredKeyError,
        ResultNotJsonError,
        RetryAfter,
        TsumugiError,
        TsumugiTimeoutError,
    )
    from tsumugi.flows import FlowBuilder, create_flow
    from tsumugi.logging import configure_logging
    from tsumugi.performer import HeartbeatResult, JobContext, Performer, remote
    from tsumugi.rest_client import AsyncTsumugiClient, RestApiError, TsumugiClient
    from tsumugi.runtimes.local.runtime import LocalRuntime

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
    "EnqueueOutcome": "tsumugi.core.enqueue_outcome",
    "create_flow": "tsumugi.flows",
    "FlowBuilder": "tsumugi.flows",
    "configure_logging": "tsumugi.logging",
    # Loaded on first use, so importing tsumugi never loads the local runtime, httpx or pydantic.
    "LocalRuntime": "tsumugi.runtimes.local.runtime",
    **dict.fromkeys(("AsyncTsumugiClient", "RestApiError", "TsumugiClient"), "tsumugi.rest_client"),
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
        "tsumugi.core.wire_format",
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
            "JobDroppedError",
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


_load = lazy_exports(globals(), _ORIGINS)


def __getattr__(name: str) -> object:
    return _load(name)


def __dir__() -> list[str]:
    return sorted(__all__)
