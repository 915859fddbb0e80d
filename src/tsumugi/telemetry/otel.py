"""The hooks of ``tsumugi.telemetry`` on the OpenTelemetry API: spans, context, metrics (ADR-0143).

Only ``tsumugi.telemetry.enable()`` imports this module, so nothing loads ``opentelemetry`` before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

from opentelemetry import context, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from tsumugi._version import __version__
from tsumugi.errors import TsumugiTimeoutError
from tsumugi.telemetry.hooks import Inputs, NodeRecord, RunRecord
from tsumugi.telemetry.otel_metrics import BINDING, FLOW, OUTCOME, RUN_STATE, Instruments

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

T = TypeVar("T")
R = TypeVar("R")
NS_PER_MS: Final = 1_000_000
FAILED_NODE_STATES: Final = frozenset({"FAILED", "STALLED"})
_PROPAGATOR: Final = TraceContextTextMapPropagator()  # the job field is W3C traceparent (J-40)


def _ns(epoch_ms: int) -> int:
    return epoch_ms * NS_PER_MS


def _last_line(text: object) -> str:
    """A failure's summary: the last line of its text (a traceback ends with ``Type: message``)."""
    lines = [line for line in str(text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "failed"


class OpenTelemetry:
    """``tsumugi.telemetry.Telemetry`` over a tracer and a meter of the API."""

    __slots__ = ("instruments", "tracer")

    def __init__(
        self, *, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None
    ) -> None:
        self.tracer = trace.get_tracer("tsumugi", __version__, tracer_provider=tracer_provider)
        self.instruments = Instruments(meter_provider)

    async def enqueue(self, inputs: Inputs, send: Callable[[Inputs], Awaitable[list[R]]]) -> list[R]:
        bindings = {item.get("binding") for item in inputs}
        attributes: dict[str, AttributeValue] = {"tsumugi.job.count": len(inputs)}
        if len(bindings) == 1 and isinstance(binding := next(iter(bindings)), str):
            attributes[BINDING] = binding
        with self.tracer.start_as_current_span(
            "tsumugi.enqueue", kind=SpanKind.PRODUCER, attributes=attributes
        ) as span:
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier)  # the enqueue span, current now
            traceparent = carrier.get("traceparent")
            if traceparent is not None:
                inputs = [
                    item if item.get("traceparent") is not None else {**item, "traceparent": traceparent}
                    for item in inputs
                ]
            ids = await send(inputs)
            if len(ids) == 1 and isinstance(ids[0], str):
                span.set_attribute("tsumugi.job.id", ids[0])
            return ids

    def attempt(self, body: Mapping[str, object], binding: str, job_id: str, now_ms: int) -> Attempt:
        return Attempt(self, body, binding, job_id, now_ms)

    def jobs_moved(self, binding: str, state: str, count: int = 1, *, retried: bool = False) -> None:
        self.instruments.jobs_moved(binding, state, count, retried)

    def jobs_dispatched(self, binding: str, lags_ms: Sequence[int]) -> None:
        self.instruments.dispatched(binding, tuple(lags_ms))

    def run_settled(self, run: RunRecord, nodes: Sequence[NodeRecord]) -> None:
        """The run's span and its nodes', emitted now with the stored instants (ADR-0143)."""
        self.instruments.run_settled(run.flow, run.state)
        span = self.tracer.start_span(
            "tsumugi.run",
            context=context.Context(),  # a trace of its own: a run outlives whoever started it
            attributes={"tsumugi.run.id": run.run_id, FLOW: run.flow, RUN_STATE: run.state},
            start_time=_ns(run.created_at),
        )
        if run.state == "FAILED":
            span.set_status(Status(StatusCode.ERROR, "the run failed"))
        parent = trace.set_span_in_context(span)
        for node in nodes:
            self._node_span(parent, run, node)
        span.end(end_time=_ns(max(run.settled_at, run.created_at)))

    def _node_span(self, parent: context.Context, run: RunRecord, node: NodeRecord) -> None:
        attributes: dict[str, AttributeValue] = {
            "tsumugi.run.id": run.run_id,
            "tsumugi.node.id": node.node_id,
            "tsumugi.node.state": node.state,
            BINDING: node.binding,
        }
        if node.job_id is not None:
            attributes["tsumugi.job.id"] = node.job_id
        if node.child_run_id is not None:
            attributes["tsumugi.child_run.id"] = node.child_run_id
        span = self.tracer.start_span(
            "tsumugi.node", context=parent, attributes=attributes, start_time=_ns(node.created_at)
        )
        if node.state in FAILED_NODE_STATES:
            span.set_status(Status(StatusCode.ERROR, _last_line(node.error)))
        span.end(end_time=_ns(max(node.updated_at, node.created_at)))


class Attempt:
    """``tsumugi.telemetry.AttemptTrace``: the ``tsumugi.attempt`` span of one delivery."""

    __slots__ = ("_binding", "_ended", "_metrics", "_recorded", "_started_at", "span")

    def __init__(
        self, owner: OpenTelemetry, body: Mapping[str, object], binding: str, job_id: str, now_ms: int
    ) -> None:
        traceparent = body.get("traceparent")
        # J-40: the enqueuer's context is the parent; without one the attempt starts a trace.
        parent = (
            _PROPAGATOR.extract({"traceparent": traceparent})
            if isinstance(traceparent, str) and traceparent
            else context.Context()
        )
        attempt = body.get("attempt")
        attributes: dict[str, AttributeValue] = {
            BINDING: binding,
            "tsumugi.job.id": job_id,
            "tsumugi.guarantee": "at-most-once" if body.get("claimRequired") else "at-least-once",
        }
        if isinstance(attempt, int):
            attributes["tsumugi.attempt"] = attempt
        self.span = owner.tracer.start_span(
            "tsumugi.attempt", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
        )
        self._metrics = owner.instruments
        self._binding = binding
        self._started_at = now_ms
        self._ended = False
        self._recorded = False

    async def run(self, pending: Awaitable[T]) -> T:
        token = context.attach(trace.set_span_in_context(self.span))
        try:
            return await pending
        except Exception as error:
            if not self._ended:  # a late failure after a timeout belongs to no span
                self.span.record_exception(error)
                self._recorded = True
            raise
        finally:
            context.detach(token)

    def end(self, outcome: Mapping[str, object], now_ms: int, error: BaseException | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        if outcome.get("ok") is True:
            label = "success"
        else:
            label = "timeout" if isinstance(error, TsumugiTimeoutError) else "failure"
            if error is not None and not self._recorded:
                self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, _last_line(outcome.get("error"))))
            retry = outcome.get("retry")
            if isinstance(retry, Mapping) and isinstance(kind := retry.get("kind"), str):
                self.span.set_attribute("tsumugi.retry", kind)
        self.span.set_attribute(OUTCOME, label)
        self.span.end()
        self._metrics.attempt_ended(self._binding, label, now_ms - self._started_at)
