"""Heartbeat progress normalization."""
# J-67

from __future__ import annotations

import math


def normalize_progress(progress: object) -> float | None:
    """A finite number clamped into [0, 1], or None for "no progress" (leave the stored value)."""
    if isinstance(progress, bool) or not isinstance(progress, int | float):
        return None
    value = float(progress)
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, value))
