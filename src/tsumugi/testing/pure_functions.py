"""The engine's pure decisions as the testing helpers name them.

The core functions take wire dicts and ``now_ms``; these accept the user-facing config objects too
(``FixedBackoff``, ``ExponentialBackoff``, ``Policy``) and use the spec's argument names (ADR-0126).
"""
# J-80, J-101, §7.9

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from tsumugi.core import backoff as core_backoff
from tsumugi.core import schedule as core_schedule
from tsumugi.core.config import Backoff, Policy, backoff_from, policy_from
from tsumugi.core.job_view import JobView
from tsumugi.core.policy import Policy as ShardPolicy
from tsumugi.core.policy import policy_from_wire
from tsumugi.core.schedule import FRESH_BUCKET, Bucket

__all__ = ["JobFields", "JobView", "next_attempt", "schedule"]


class JobFields(TypedDict):
    """A ``JobView`` as a mapping of its snake_case fields; only ``id`` and ``state`` are required."""

    id: str
    state: str
    priority: NotRequired[float]
    created_at: NotRequired[int]
    run_after: NotRequired[int]
    attempts: NotRequired[int]
    max_attempts: NotRequired[int]
    guarantee: NotRequired[str]
    timeout_ms: NotRequired[int]
    concurrency_key: NotRequired[str | None]
    dispatched_at: NotRequired[int | None]
    heartbeat_at: NotRequired[int | None]
    cancel_requested_at: NotRequired[int | None]
    expires_at: NotRequired[int | None]


def next_attempt(
    attempts: int,
    max_attempts: int,
    backoff: Backoff | Mapping[str, object] | None,
    now: int,
    rand: float = 0.5,
) -> core_backoff.NextAttempt:
    """``(exhausted, run_after)`` after a failure; ``attempts`` counts the failure.

    ``backoff`` is a backoff object, a mapping in either spelling, or None for the default.
    """
    # J-101, J-100
    wire = None if backoff is None else backoff_from(backoff).to_wire()
    return core_backoff.next_attempt(attempts, max_attempts, wire, now, rand)


def schedule(
    now: int,
    jobs: Sequence[JobView | JobFields],
    policy: Policy | ShardPolicy | Mapping[str, object] | None = None,
    bucket: Bucket = FRESH_BUCKET,
    key_buckets: Mapping[str, Bucket] | None = None,
) -> core_schedule.ScheduleResult:
    """One scheduler tick over the active ``jobs``; ``policy`` defaults to a binding's default policy.

    A job is a ``JobView`` or a mapping of its snake_case fields.
    """
    views = [job if isinstance(job, JobView) else JobView(**job) for job in jobs]
    return core_schedule.schedule(now, views, _shard_policy(policy), bucket, key_buckets)


def _shard_policy(policy: Policy | ShardPolicy | Mapping[str, object] | None) -> ShardPolicy:
    converted = policy_from(policy)  # ADR-0157: the shard reads the same Policy class users build
    if converted is None:
        return ShardPolicy()
    # A function override has no enqueued keys to be resolved for here, so it goes, as on the wire.
    return policy_from_wire(converted.to_wire()) if converted.has_override_functions else converted
