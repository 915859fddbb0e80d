"""Read-model upkeep beside the coordinators: retention sweep and the Analytics Engine metrics.

The projection itself (outbox -> read model) is
``tsumugi.storage.read_model_writer.D1ReadModelWriter``, which the coordinators call through
``ports.ReadModelWriter``; the local metrics table and its writer are there too, its reader is
``tsumugi.storage.metrics_reader``; the migration check is ``tsumugi.storage.read_model_migrations``
(ADR-0061).
"""
# J-172, M-1..M-12, J-192

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

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
_HOMES = {
    "AnalyticsCredentials": "analytics_engine",
    "AnalyticsEngineReader": "analytics_engine",
    "AnalyticsEngineWriter": "analytics_engine",
    "analytics_data_point": "analytics_engine",
    "analytics_engine_metrics": "analytics_engine",
    "SweepOptions": "read_model_sweep",
    "sweep_read_model": "read_model_sweep",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
