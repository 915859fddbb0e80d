"""The ``tsumugi.*`` instruments, made once from a meter of the OpenTelemetry API (ADR-0143)."""

from __future__ import annotations

from typing import Final

from opentelemetry import metrics

from tsumugi._version import __version__

BINDING: Final = "tsumugi.binding"
STATE: Final = "tsumugi.job.state"
OUTCOME: Final = "tsumugi.outcome"
FLOW: Final = "tsumugi.flow"
RUN_STATE: Final = "tsumugi.run.state"


class Instruments:
    """Counters and histograms; each ``record_*`` call is one measurement."""

    __slots__ = ("attempt_duration", "queue_lag", "retries", "runs_settled", "stalls", "state_changes")

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        meter = metrics.get_meter("tsumugi", __version__, meter_provider=meter_provider)
        self.state_changes = meter.create_counter(
            "tsumugi.job.state_changes", unit="{job}", description="Jobs that entered a state"
        )
        self.retries = meter.create_counter(
            "tsumugi.job.retries", unit="{job}", description="Failed attempts scheduled to run again"
        )
        self.stalls = meter.create_counter(
            "tsumugi.job.stalls", unit="{job}", description="Jobs that went silent and were stalled"
        )
        self.attempt_duration = meter.create_histogram(
            "tsumugi.attempt.duration", unit="ms", description="From the consumer's start to the outcome"
        )
        self.queue_lag = meter.create_histogram(
            "tsumugi.job.queue_lag", unit="ms", description="From a job's run_after to its dispatch"
        )
        self.runs_settled = meter.create_counter(
            "tsumugi.run.settled", unit="{run}", description="Flow runs that left RUNNING"
        )

    def jobs_moved(self, binding: str, state: str, count: int, retried: bool) -> None:
        self.state_changes.add(count, {BINDING: binding, STATE: state})
        if retried:
            self.retries.add(count, {BINDING: binding})
        if state == "STALLED":
            self.stalls.add(count, {BINDING: binding})

    def attempt_ended(self, binding: str, outcome: str, duration_ms: int) -> None:
        self.attempt_duration.record(max(duration_ms, 0), {BINDING: binding, OUTCOME: outcome})

    def dispatched(self, binding: str, lags_ms: list[int] | tuple[int, ...]) -> None:
        attributes = {BINDING: binding}
        self.state_changes.add(len(lags_ms), {BINDING: binding, STATE: "QUEUED"})
        for lag_ms in lags_ms:
            self.queue_lag.record(max(lag_ms, 0), attributes)

    def run_settled(self, flow: str, state: str) -> None:
        self.runs_settled.add(1, {FLOW: flow, RUN_STATE: state})
