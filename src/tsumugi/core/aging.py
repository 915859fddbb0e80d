"""Effective priority with aging."""
# J-150a

from __future__ import annotations

import math


def effective_priority(priority: float, created_at: int, now_ms: int, aging_interval_ms: int | None) -> float:
    """``priority + floor(max(0, now - created_at) / aging_interval_ms)``; no aging when unset or <= 0.

    Aging counts from creation, so delayed and retried jobs arrive already aged.
    """
    # J-150a
    if aging_interval_ms is None or aging_interval_ms <= 0:
        return priority
    return priority + math.floor(max(0, now_ms - created_at) / aging_interval_ms)
