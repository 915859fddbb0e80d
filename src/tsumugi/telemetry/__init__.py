"""OpenTelemetry spans and metrics, off until ``enable()`` is called (ADR-0143).

Configure an OpenTelemetry SDK as usual (a tracer provider, a meter provider, OTLP exporters), then::

    import tsumugi.telemetry

    tsumugi.telemetry.enable()

From then on this process traces each enqueue (``tsumugi.enqueue``), each attempt (``tsumugi.attempt``,
a child of the enqueuer's span through the job's ``traceparent``), and each flow run and its nodes
(``tsumugi.run``, ``tsumugi.node``), and records the ``tsumugi.*`` metrics. Tsumugi only uses the
OpenTelemetry API's providers (the global ones, or those passed here); it never configures an SDK.

Until ``enable()`` nothing imports ``opentelemetry``, and the engine's hooks cost one ``None`` check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tsumugi.errors import ConfigurationError
from tsumugi.lazy_exports import lazy_exports

if TYPE_CHECKING:  # nothing imports opentelemetry before enable() (ADR-0143)
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from tsumugi.telemetry.hooks import AttemptTrace, NodeRecord, RunRecord, Telemetry

__all__ = ["AttemptTrace", "NodeRecord", "RunRecord", "Telemetry", "active", "disable", "enable", "enabled"]

# The hooks the engine calls; None (the default) means off. Engine code reads it as `telemetry.active`.
active: Telemetry | None = None

_MISSING = "OpenTelemetry needs the opentelemetry-api package: pip install 'tsumugi[otel]'"


def enable(
    *, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None
) -> None:
    """Turn spans and metrics on for this process.

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider``; the global one when not given.
        meter_provider: an OpenTelemetry ``MeterProvider``; the global one when not given.

    Raises:
        ConfigurationError: ``opentelemetry-api`` is not installed.
    """
    global active
    try:
        from tsumugi.telemetry.otel import OpenTelemetry
    except ImportError as error:
        raise ConfigurationError(_MISSING) from error
    active = OpenTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


def disable() -> None:
    """Turn spans and metrics off again; spans already started still end."""
    global active
    active = None


def enabled() -> bool:
    """Whether ``enable()`` turned telemetry on."""
    return active is not None


# The hooks' protocols and records load on first use: a process with telemetry off needs none.
_load = lazy_exports(
    globals(),
    dict.fromkeys(("AttemptTrace", "NodeRecord", "RunRecord", "Telemetry"), "tsumugi.telemetry.hooks"),
)


def __getattr__(name: str) -> object:
    return _load(name)
