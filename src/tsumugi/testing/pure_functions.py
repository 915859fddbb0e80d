"""The engine's pure decisions as the testing helpers name them.

The core functions take wire dicts and ``now_ms``; these accept the user-facing config objects too
(``FixedBackoff``, ``ExponentialBackoff``, ``Policy``) and use the spec's argument names (ADR-0126).
"""
# J-80, J-101, §7.9

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tsumugi.core import backoff as core_backoff
from tsumugi.core import schedule as core_schedule
from tsumugi.core.config import Backoff, Policy, backoff_from, policy_from
from tsumugi.core.policy import Policy as ShardPolicy
from tsumugi.core.policy import policy_from_wire
from tsumugi.core.schedule import JobView
from tsumugi.core.token_bucket import FRESH_BUCKET, Bucket

__all__ = ["JobView", "next_attempt", "schedule"]


def next_attempt(
    attempts: int,
    max_attempts: int,
    backoff: Backoff | Mapping[str, Any] | None,
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
    jobs: Sequence[JobView | Mapping[str, Any]],
    policy: Policy | ShardPolicy | Mapping[str, Any] | None = None,
    bucket: Bucket = FRESH_BUCKET,
    key_buckets: Mapping[str, Bucket] | None = None,
) -> core_schedule.ScheduleResult:
    """One scheduler tick over the active ``jobs``; ``policy`` defaults to a binding's default policy.

    A job is a ``JobView`` or a mapping of its snake_case fields.
    """
    views = [job if isinstance(job, JobView) else JobView(**job) for job in jobs]
    return core_schedule.schedule(now, views, _shard_policy(policy), bucket, key_buckets)


def _shard_policy(policy: Policy | ShardPolicy | Mapping[str, Any] | None) -> ShardPolicy:
    if isinstance(policy, ShardPolicy):
        return policy
    if isinstance(policy, Policy):
        return policy_from_wire(policy.to_wire())
    converted = policy_from(policy)
    return ShardPolicy() if converted is None else policy_from_wire(converted.to_wire())
