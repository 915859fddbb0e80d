"""What the scheduler reads of one active job: the ``SchedulableJob`` protocol, and ``JobView``, a plain
value of it for tests and tools (``tsumugi.testing.schedule`` takes it).

The job shard passes rows of its own shape instead (``coordinator.shard_tick.view_of``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tsumugi.core.defaults import (
    DEFAULT_GUARANTEE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_TIMEOUT_MS,
)

__all__ = ["JobView", "SchedulableJob"]


@dataclass(frozen=True, slots=True)
class JobView:
    """What the scheduler needs to know of one active job."""

    id: str
    state: str
    priority: float = DEFAULT_PRIORITY
    created_at: int = 0
    run_after: int = 0
    attempts: int = 0
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    guarantee: str = DEFAULT_GUARANTEE
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    concurrency_key: str | None = None
    dispatched_at: int | None = None
    heartbeat_at: int | None = None
    cancel_requested_at: int | None = None
    expires_at: int | None = None


class SchedulableJob(Protocol):
    """What ``schedule`` reads of a job: a ``JobView``, or any object with the same read-only fields.

    The shard passes rows of its own shape (a named tuple per row) rather than building a ``JobView``.
    """

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def priority(self) -> float: ...
    @property
    def created_at(self) -> int: ...
    @property
    def run_after(self) -> int: ...
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def guarantee(self) -> str: ...
    @property
    def timeout_ms(self) -> int: ...
    @property
    def concurrency_key(self) -> str | None: ...
    @property
    def dispatched_at(self) -> int | None: ...
    @property
    def heartbeat_at(self) -> int | None: ...
    @property
    def cancel_requested_at(self) -> int | None: ...
    @property
    def expires_at(self) -> int | None: ...
