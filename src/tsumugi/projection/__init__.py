"""Read-model upkeep beside the coordinators: retention sweep and the Analytics Engine metrics.

The projection itself (outbox -> read model) is
``tsumugi.storage.read_model_writer.D1ReadModelWriter``, which the coordinators call through
``ports.ReadModelWriter``; the local metrics table and its writer are there too, its reader is
``tsumugi.storage.metrics_reader``; the migration check is ``tsumugi.storage.read_model_migrations``
(ADR-0061).
"""
# J-172, M-1..M-12, J-192

from __future__ import annotations

from typing import TYPE_CHECKING

from tsumugi.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from tsumugi.projection.analytics_engine import (
        AnalyticsCredentials,
        AnalyticsEngineReader,
        AnalyticsEngineWriter,
        analytics_data_point,
        analytics_engine_metrics,
    )
    from tsumugi.projection.read_model_sweep import SweepOptions, sweep_read_model

__all__ = [
    "AnalyticsCredentials",
    "AnalyticsEngineReader",
    "AnalyticsEngineWriter",
    "SweepOptions",
    "analytics_data_point",
    "analytics_engine_metrics",
    "sweep_read_model",
]

# Each name loads its module on first use: an app without Analytics Engine metrics never loads them.
_ANALYTICS, _SWEEP = "tsumugi.projection.analytics_engine", "tsumugi.projection.read_model_sweep"
_load = lazy_exports(
    globals(),
    {
        "AnalyticsCredentials": _ANALYTICS,
        "AnalyticsEngineReader": _ANALYTICS,
        "AnalyticsEngineWriter": _ANALYTICS,
        "analytics_data_point": _ANALYTICS,
        "analytics_engine_metrics": _ANALYTICS,
        "SweepOptions": _SWEEP,
        "sweep_read_model": _SWEEP,
    },
)


def __getattr__(name: str) -> object:
    return _load(name)


def __dir__() -> list[str]:
    return sorted(__all__)
