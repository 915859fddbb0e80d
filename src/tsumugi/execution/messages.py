"""The wire shapes the consumer reads and writes: the shard's dispatch message and the report it answers.

Both are the plain dicts that cross the queue and the shard's ``report`` RPC, keys in the original's
camelCase; typed dicts describe them without a conversion on the way (a job passes through here once per
attempt). The shard reads a report back into ``tsumugi.core.states``'s values.
"""
# J-116, J-119, J-76

# No postponed annotations here: TypedDict reads NotRequired only from evaluated ones, and the tests read
# ``__required_keys__``.
from typing import Literal, NotRequired, Required, TypeAlias, TypedDict

from tsumugi.core.json_types import JsonValue

__all__ = [
    "AttemptReport",
    "DispatchMessage",
    "FailureReport",
    "RetryAt",
    "RetryNever",
    "SpawnWire",
    "SuccessReport",
]


class DispatchMessage(TypedDict, total=False):
    """A queue message as the shard sends it; only ``jobId`` is sure to be there."""

    # J-116

    jobId: Required[str]
    binding: str
    attempt: int  # the attempt this delivery is, counted from 1
    payload: JsonValue
    timeoutMs: int | None  # None: the consumer's default
    claimRequired: bool  # at-most-once: claim before performing (J-107)
    expiresAt: int | None  # epoch ms after which the job must not start (J-41)
    traceparent: str | None


class SpawnWire(TypedDict):
    """A child a flow performer asked for, as the success report carries it."""

    id: str
    binding: str
    payload: object  # the performer's value, encoded by the shard
    options: NotRequired[dict[str, object]]  # camelCase option names over the binding's class defaults


class RetryNever(TypedDict):
    """A permanent failure: no retry, whatever attempts are left."""

    kind: Literal["never"]


class RetryAt(TypedDict):
    """The performer chose when to retry (epoch ms)."""

    kind: Literal["at"]
    at: int


class SuccessReport(TypedDict):
    """``{ok: true, result, spawns?, attempt?}``: spawns only when there are some."""

    ok: Literal[True]
    result: JsonValue  # the stored JSON of what perform returned
    spawns: NotRequired[list[SpawnWire]]
    attempt: NotRequired[int]


class FailureReport(TypedDict):
    """``{ok: false, error, retry?, attempt?}``; the consumer always says why (the shard also takes none)."""

    ok: Literal[False]
    error: str
    retry: NotRequired[RetryNever | RetryAt]
    attempt: NotRequired[int]


AttemptReport: TypeAlias = SuccessReport | FailureReport
