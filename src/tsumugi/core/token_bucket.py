"""Token bucket math for ``rate`` and ``perKeyRate``."""
# J-148, J-149, J-149a

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from tsumugi.core.config_policy import Rate
from tsumugi.core.json_types import JsonObject


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
