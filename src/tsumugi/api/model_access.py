"""Python spellings on the REST response models: snake_case for camelCase wire fields, decoded JSON text.

The models keep the wire names as their fields, so the OpenAPI document and ``--json`` output stay the
wire's; these mixins only add read-only properties (ADR-0146): ``stats.by_state`` beside
``stats.byState``, ``job.decoded_payload`` beside the ``payload`` JSON text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tsumugi.core.json_types import JsonValue

__all__ = [
    "BindingMetricsAccess",
    "BlockedFlagsAccess",
    "JobDetailAccess",
    "MetricsPointAccess",
    "RunDetailAccess",
    "RunNodeAccess",
    "StatsAccess",
]


def _decoded(text: str | None) -> JsonValue:
    decoded: JsonValue = None if text is None else json.loads(text)
    return decoded


class JobDetailAccess:
    if TYPE_CHECKING:
        payload: str
        result: str | None

    @property
    def decoded_payload(self) -> JsonValue:
        """The payload, decoded from the JSON text the API sends."""
        return _decoded(self.payload)

    @property
    def decoded_result(self) -> JsonValue:
        """The result, decoded from its JSON text; None while the job has none."""
        return _decoded(self.result)


class RunDetailAccess:
    if TYPE_CHECKING:
        input: str

    @property
    def decoded_input(self) -> JsonValue:
        """The run's input, decoded from the JSON text the API sends."""
        return _decoded(self.input)


class RunNodeAccess:
    if TYPE_CHECKING:
        result: str | None

    @property
    def decoded_result(self) -> JsonValue:
        """The node's result, decoded from its JSON text; None while it has none."""
        return _decoded(self.result)


class StatsAccess:
    if TYPE_CHECKING:
        byState: dict[str, int]
        oldestScheduledMs: int | None

    @property
    def by_state(self) -> dict[str, int]:
        """Jobs per state (``byState``)."""
        return self.byState

    @property
    def oldest_scheduled_ms(self) -> int | None:
        """How long the oldest due SCHEDULED job has waited, in ms (``oldestScheduledMs``)."""
        return self.oldestScheduledMs


class BlockedFlagsAccess:
    if TYPE_CHECKING:
        perKey: bool

    @property
    def per_key(self) -> bool:
        """A per-key limit held a ready job back on the last tick (``perKey``)."""
        return self.perKey


class MetricsPointAccess:
    if TYPE_CHECKING:
        avgDurationMs: float

    @property
    def avg_duration_ms(self) -> float:
        """``avgDurationMs``."""
        return self.avgDurationMs


class BindingMetricsAccess(MetricsPointAccess):
    if TYPE_CHECKING:
        failureRate: float
        maxDurationMs: float
        p95DurationMs: float
        avgAttempts: float

    @property
    def failure_rate(self) -> float:
        """``failureRate``."""
        return self.failureRate

    @property
    def max_duration_ms(self) -> float:
        """``maxDurationMs``."""
        return self.maxDurationMs

    @property
    def p95_duration_ms(self) -> float:
        """``p95DurationMs``."""
        return self.p95DurationMs

    @property
    def avg_attempts(self) -> float:
        """``avgAttempts``."""
        return self.avgAttempts
