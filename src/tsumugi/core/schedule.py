"""The pure dispatch decision of one tick (ADR-0018, ADR-0043), and the token buckets of ``rate`` and
``perKeyRate`` it spends.

``schedule`` takes plain data plus ``now_ms`` and returns decisions as values; the job shard applies them.
The shard passes only a window of its jobs (ADR-0043): in-flight jobs it did not load are counted through
``uncounted_in_flight`` / ``uncounted_key_in_flight`` so that limits stay exact at any backlog size.
What the scheduler reads of a job is ``core.job_view``'s ``SchedulableJob``.
"""
# J-140..J-146, J-148, J-149, J-149a, J-149b, J-150a

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from tsumugi.core.config_policy import Policy, Rate
from tsumugi.core.job_view import SchedulableJob
from tsumugi.core.json_types import JsonObject

AT_MOST_ONCE = "at-most-once"


# ---------------------------------------------------------------- token buckets (J-148, J-149)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Tokens left and when they were last refilled; a fresh bucket is ``+inf`` (full once refilled)."""

    tokens: float = math.inf
    refilled_at: int | None = None

    def to_wire(self) -> JsonObject:
        return {"tokens": self.tokens, "refilledAt": self.refilled_at}


FRESH_BUCKET = Bucket()
_FLOAT_INPUTS: Final = (int, float, str)  # a tuple: ``int | float | str`` builds a union object per call


def bucket_from_wire(wire: Mapping[str, object] | None) -> Bucket:
    """``{tokens, refilledAt}`` as stored; nothing stored is a fresh bucket."""
    if not wire:
        return FRESH_BUCKET
    tokens, refilled_at = wire["tokens"], wire.get("refilledAt")
    if not isinstance(tokens, _FLOAT_INPUTS):  # what float() reads
        raise TypeError(f"a stored bucket needs a number of tokens, got {tokens!r}")
    if refilled_at is not None and not isinstance(refilled_at, int):
        if not isinstance(refilled_at, float):
            raise TypeError(f"a stored bucket's refilledAt must be epoch ms, got {refilled_at!r}")
        refilled_at = int(refilled_at)
    return Bucket(tokens=float(tokens), refilled_at=refilled_at)


def _tokens_per_ms(rate: Rate) -> float:
    if rate.interval_ms <= 0:
        return math.inf if rate.tokens > 0 else 0.0
    return rate.tokens / rate.interval_ms


def refill(bucket: Bucket, rate: Rate | None, now_ms: int) -> Bucket:
    """Refill continuously at ``tokens/interval_ms`` up to ``tokens``; no rate means ``+inf``."""
    # J-148
    if rate is None:
        return Bucket(math.inf, now_ms)
    elapsed = 0 if bucket.refilled_at is None else max(0, now_ms - bucket.refilled_at)
    per_ms = _tokens_per_ms(rate)
    gained = 0.0 if elapsed == 0 or per_ms == 0 else elapsed * per_ms
    return Bucket(min(float(rate.tokens), bucket.tokens + gained), now_ms)


def ms_until_token(bucket: Bucket, rate: Rate | None) -> int | None:
    """Milliseconds until the bucket holds one token; None when it never will."""
    # J-148
    if rate is None or bucket.tokens >= 1:
        return 0
    per_ms = _tokens_per_ms(rate)
    if per_ms <= 0:
        return None  # a zero-token rate blocks forever: no wake-up planned
    return max(1, math.ceil((1 - bucket.tokens) / per_ms))


def is_full(bucket: Bucket, rate: Rate | None) -> bool:
    """True when storing the bucket is unnecessary: a missing bucket starts full."""
    # J-149, J-149a
    return rate is None or bucket.tokens >= rate.tokens


# ---------------------------------------------------------------- the decisions of a tick


@dataclass(frozen=True, slots=True)
class Dispatch:
    """SCHEDULED -> QUEUED (E2)."""

    id: str


@dataclass(frozen=True, slots=True)
class Reap:
    """Silent at-least-once job with attempts left -> SCHEDULED with ``attempts`` (E7, ADR-0045)."""

    id: str
    attempts: int


@dataclass(frozen=True, slots=True)
class Stall:
    """Silent at-most-once job -> STALLED (E9)."""

    id: str
    attempts: int


@dataclass(frozen=True, slots=True)
class Fail:
    """Silent at-least-once job whose attempts are used up -> FAILED (E8)."""

    id: str
    attempts: int
    reason: str = "exhausted"


@dataclass(frozen=True, slots=True)
class ConfirmCancel:
    """No report within ``reaper_grace_ms`` of a cancel request -> CANCELLED."""

    # J-135

    id: str


@dataclass(frozen=True, slots=True)
class Expire:
    """A ready job past its ``expires_at`` -> CANCELLED instead of running."""

    # J-41

    id: str


Decision = Dispatch | Reap | Stall | Fail | ConfirmCancel | Expire


@dataclass(frozen=True, slots=True)
class Blocked:
    """Which limit stopped dispatching in a tick."""

    # J-145

    capacity: bool = False
    tokens: bool = False
    per_key: bool = False
    per_key_tokens: bool = False
    paused: bool = False

    def to_wire(self) -> JsonObject:
        return {
            "capacity": self.capacity,
            "tokens": self.tokens,
            "perKey": self.per_key,
            "perKeyTokens": self.per_key_tokens,
            "paused": self.paused,
        }


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """What one tick decides. ``decided`` holds the decisions on jobs it does not dispatch (reaps,
    stalls, failures, confirmed cancels, expiries), ``dispatched`` the jobs it dispatches, in the
    order they go; ``decisions`` lists them all as ``Decision``s."""

    decided: tuple[Decision, ...]
    bucket: Bucket
    dispatched: tuple[SchedulableJob, ...] = ()
    key_buckets: dict[str, Bucket] = field(default_factory=dict)
    next_alarm_at: int | None = None
    blocked: Blocked = Blocked()

    @property
    def decisions(self) -> tuple[Decision, ...]:
        """Every decision of the tick in order, the dispatches last: one ``Dispatch`` per dispatched job."""
        return self.decided + tuple(Dispatch(job.id) for job in self.dispatched)


def silence_deadline(job: SchedulableJob, reaper_grace_ms: int) -> int:
    """When the reaper acts on an in-flight job, or earlier after a cancel request."""
    # J-111, J-135
    dispatched_at = job.dispatched_at if job.dispatched_at is not None else job.created_at
    origin = max(dispatched_at, job.heartbeat_at if job.heartbeat_at is not None else dispatched_at)
    deadline = origin + job.timeout_ms + reaper_grace_ms
    if job.cancel_requested_at is not None:
        deadline = min(deadline, job.cancel_requested_at + reaper_grace_ms)
    return deadline


def reaper_decision(job: SchedulableJob) -> Decision:
    """What the reaper does with a silent attempt; it counts as finished (ADR-0045)."""
    if job.cancel_requested_at is not None:
        return ConfirmCancel(job.id)
    attempts = job.attempts + 1
    if job.guarantee == AT_MOST_ONCE:
        return Stall(job.id, attempts)
    if attempts >= job.max_attempts:
        return Fail(job.id, attempts)
    return Reap(job.id, attempts)


def _earliest(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def schedule(
    now_ms: int,
    jobs: Sequence[SchedulableJob],
    policy: Policy,
    bucket: Bucket = FRESH_BUCKET,
    key_buckets: Mapping[str, Bucket] | None = None,
    *,
    uncounted_in_flight: int = 0,
    uncounted_key_in_flight: Mapping[str, int] | None = None,
    ready_in_order: bool = False,
) -> ScheduleResult:
    """Decide reaps, expiries and dispatches for one tick; the inputs are never mutated.

    ``ready_in_order``: the caller gives the due SCHEDULED jobs already in dispatch order (as the
    shard reads them), so they are not sorted again.
    """
    grace = policy.reaper_grace_ms
    decisions: list[Decision] = []
    in_flight = uncounted_in_flight
    key_in_flight: dict[str, int] = dict(uncounted_key_in_flight or {})
    next_deadline: int | None = None
    next_run_after: int | None = None
    ready: list[SchedulableJob] = []
    for job in jobs:
        if job.state in ("QUEUED", "RUNNING"):
            deadline = silence_deadline(job, grace)
            if deadline <= now_ms:  # J-140, J-111: inclusive
                decisions.append(reaper_decision(job))
                continue
            next_deadline = _earliest(next_deadline, deadline)
            in_flight += 1  # J-141
            if job.concurrency_key is not None:
                key_in_flight[job.concurrency_key] = key_in_flight.get(job.concurrency_key, 0) + 1
        elif job.state == "SCHEDULED":
            if job.run_after <= now_ms:
                ready.append(job)
            else:
                next_run_after = _earliest(next_run_after, job.run_after)
    bucket = refill(bucket, policy.rate, now_ms)  # J-148: refill at the start of each tick
    walk = _Walk(now_ms, policy, bucket, key_buckets or {}, key_in_flight, in_flight)
    if not ready_in_order:
        ready.sort(key=candidate_key(now_ms, policy.aging_interval_ms))
    dispatched = walk.run(ready, decisions)
    wake_ups = [next_run_after, next_deadline, walk.next_deadline, walk.token_wake_at]
    if decisions:
        wake_ups.append(now_ms)  # J-144, J-146: reaped/expired jobs need another tick at once
    return ScheduleResult(
        decided=tuple(decisions),
        bucket=walk.bucket,
        dispatched=tuple(dispatched),
        key_buckets=walk.key_buckets,
        next_alarm_at=_earliest(*wake_ups),
        blocked=walk.blocked(),
    )


class _Walk:
    """The greedy dispatch walk over ready candidates."""

    # J-142, J-143

    def __init__(
        self,
        now_ms: int,
        policy: Policy,
        bucket: Bucket,
        key_buckets: Mapping[str, Bucket],
        key_in_flight: dict[str, int],
        in_flight: int,
    ) -> None:
        self.now_ms = now_ms
        self.policy = policy
        self.bucket = bucket
        self._stored_key_buckets = key_buckets
        self.key_buckets: dict[str, Bucket] = {}
        self.key_in_flight = key_in_flight
        self.slots = max(0, policy.concurrency - in_flight)
        self.next_deadline: int | None = None
        self.token_wake_at: int | None = None
        self.flags: dict[str, bool] = {}

    def blocked(self) -> Blocked:
        return Blocked(**self.flags)

    def _key_bucket(self, key: str) -> Bucket:
        if key not in self.key_buckets:  # J-149a: refilled once per tick; a key never seen starts full
            stored = self._stored_key_buckets.get(key, FRESH_BUCKET)
            self.key_buckets[key] = refill(stored, self.policy.key_rate(key), self.now_ms)
        return self.key_buckets[key]

    def _wake_for_tokens(self, bucket: Bucket, key: str | None) -> None:
        rate = self.policy.rate if key is None else self.policy.key_rate(key)
        wait_ms = ms_until_token(bucket, rate)
        if wait_ms is not None:
            self.token_wake_at = _earliest(self.token_wake_at, self.now_ms + wait_ms)

    def run(self, ready: list[SchedulableJob], out: list[Decision]) -> list[SchedulableJob]:
        """The jobs to dispatch from ``ready`` (in dispatch order), in order; expiries go to ``out``."""
        now_ms, policy = self.now_ms, self.policy
        candidates: list[SchedulableJob] = []
        for job in ready:
            if job.expires_at is not None and now_ms >= job.expires_at:
                out.append(Expire(job.id))
            else:
                candidates.append(job)
        dispatched: list[SchedulableJob] = []
        if candidates and policy.paused:
            self.flags["paused"] = True  # J-149b: a pause stops dispatching only
            return dispatched
        shortest: int | None = None  # the shortest timeout dispatched: the earliest silence deadline
        unlimited = math.isinf(self.bucket.tokens)  # no rate: taking a token leaves the bucket as it is
        for job in candidates:
            if self.slots <= 0:
                self.flags["capacity"] = True
                break
            if self.bucket.tokens < 1:
                self.flags["tokens"] = True
                self._wake_for_tokens(self.bucket, None)
                break
            key = job.concurrency_key
            if key is not None and self._key_holds_back(key):
                continue  # other keys must not starve behind a full key (J-143.3)
            dispatched.append(job)
            self.slots -= 1
            if not unlimited:
                self.bucket = _take(self.bucket)
            if key is not None:
                self._spend_key(key)
            if shortest is None or job.timeout_ms < shortest:
                shortest = job.timeout_ms
        if shortest is not None:
            self.next_deadline = now_ms + shortest + policy.reaper_grace_ms
        return dispatched

    def _key_holds_back(self, key: str) -> bool:
        """Whether ``key``'s concurrency or its tokens hold its next job back (flagged as blocked)."""
        if self.key_in_flight.get(key, 0) >= self.policy.key_concurrency(key):
            self.flags["per_key"] = True
            return True
        if self.policy.key_rate(key) is not None and self._key_bucket(key).tokens < 1:
            self.flags["per_key_tokens"] = True
            self._wake_for_tokens(self._key_bucket(key), key)
            return True
        return False

    def _spend_key(self, key: str) -> None:
        self.key_in_flight[key] = self.key_in_flight.get(key, 0) + 1
        if self.policy.key_rate(key) is not None:
            self.key_buckets[key] = _take(self._key_bucket(key))


def effective_priority(priority: float, created_at: int, now_ms: int, aging_interval_ms: int | None) -> float:
    """``priority + floor(max(0, now - created_at) / aging_interval_ms)``; no aging when unset or <= 0.

    Aging counts from creation, so delayed and retried jobs arrive already aged.
    """
    # J-150a
    if aging_interval_ms is None or aging_interval_ms <= 0:
        return priority
    return priority + math.floor(max(0, now_ms - created_at) / aging_interval_ms)


def candidate_order(
    job: SchedulableJob, now_ms: int, aging_interval_ms: int | None
) -> tuple[float, int, str]:
    """The dispatch sort key: effective priority descending, then ``created_at``, then ``id``."""
    return candidate_key(now_ms, aging_interval_ms)(job)


def candidate_key(
    now_ms: int, aging_interval_ms: int | None
) -> Callable[[SchedulableJob], tuple[float, int, str]]:
    """``candidate_order`` at ``now_ms`` as a one-argument key, with no aging step when aging is off."""
    if aging_interval_ms is None or aging_interval_ms <= 0:
        return lambda job: (-job.priority, job.created_at, job.id)
    return lambda job: (
        -effective_priority(job.priority, job.created_at, now_ms, aging_interval_ms),
        job.created_at,
        job.id,
    )


def _take(bucket: Bucket) -> Bucket:
    return bucket if math.isinf(bucket.tokens) else Bucket(bucket.tokens - 1, bucket.refilled_at)
