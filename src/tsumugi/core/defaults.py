"""Every configuration default, said once (ADR-0157).

The user-facing values (``Policy``, ``BindingConfig``, ``RunSettings``, ``SweepOptions``, the backoffs),
the shard's reading of its stored settings, the consumer and the REST options all take their defaults
from here, so changing one is a one-line change and two places cannot drift apart.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_AGING_INTERVAL_MS",
    "DEFAULT_BACKOFF_BASE_MS",
    "DEFAULT_BACKOFF_FACTOR",
    "DEFAULT_BACKOFF_MAX_MS",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_FAILED_RETENTION_MS",
    "DEFAULT_GUARANTEE",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_PER_KEY_CONCURRENCY",
    "DEFAULT_PRIORITY",
    "DEFAULT_READ_MODEL_RETENTION_MS",
    "DEFAULT_REAPER_GRACE_MS",
    "DEFAULT_SWEEP_AFTER_MS",
    "DEFAULT_SWEEP_LIMIT",
    "DEFAULT_TIMEOUT_MS",
]

# J-147: the policy of a shard nobody configured.
DEFAULT_CONCURRENCY: Final = 100  # jobs in flight per shard: the original's default, one Queue batch
DEFAULT_PER_KEY_CONCURRENCY: Final = 1  # a concurrency key serialises its jobs unless told otherwise
DEFAULT_AGING_INTERVAL_MS: Final = 60_000  # +1 effective priority per minute waited, so nothing starves
DEFAULT_REAPER_GRACE_MS: Final = 30_000  # a job past its deadline gets 30 s to report before it is stalled

# J-170, J-171: shard retention of terminal jobs.
DEFAULT_SWEEP_AFTER_MS: Final = 300_000  # 5 min: COMPLETED/CANCELLED linger long enough to be read back
DEFAULT_FAILED_RETENTION_MS: Final = 604_800_000  # 7 d: FAILED/STALLED are the manual-retry window

# J-172: the read model keeps terminal rows as long as the shard keeps failed ones, so "listed => retryable".
DEFAULT_READ_MODEL_RETENTION_MS: Final = DEFAULT_FAILED_RETENTION_MS
DEFAULT_SWEEP_LIMIT: Final = 1_000  # rows deleted per read-model sweep run, bounding one cron invocation

# The job options an enqueue leaves out (jobs.md, the enqueue options table).
DEFAULT_PRIORITY: Final = 0  # priorities are relative: 0 is "normal", above runs first, below later
DEFAULT_MAX_ATTEMPTS: Final = 3  # J-29: attempts including the first: one try and two retries, then FAILED
DEFAULT_GUARANTEE: Final = "at-least-once"  # J-106: a crash mid-attempt retries rather than loses the job
DEFAULT_TIMEOUT_MS: Final = 60_000  # J-110: the consumer's wait for one attempt when the job names none

# J-100: the exponential backoff of a job that names none: 1 s, 2 s, 4 s, ... capped at an hour.
DEFAULT_BACKOFF_BASE_MS: Final = 1_000
DEFAULT_BACKOFF_FACTOR: Final = 2
DEFAULT_BACKOFF_MAX_MS: Final = 3_600_000
