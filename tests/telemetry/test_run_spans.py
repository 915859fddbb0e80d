"""``tsumugi.run`` and ``tsumugi.node`` spans, emitted when a run settles (ADR-0143)."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from tests import polling
from tests.telemetry.conftest import DEADLINE_S, START, Local, Otel


async def test_a_completed_run_has_a_span_with_a_child_per_node(otel: Otel, local: Local) -> None:
    run_id = await local.app.start(local.env, "CHAIN", {"fail": 0}, id="ok")
    [run] = await polling.until(lambda: otel.spans("tsumugi.run"), "the run's span", DEADLINE_S)
    assert dict(run.attributes or {}) == {
        "tsumugi.run.id": run_id,
        "tsumugi.flow": "CHAIN",
        "tsumugi.run.state": "COMPLETED",
    }
    assert run.parent is None and run.start_time == START * 1_000_000  # from the run's stored instant
    assert run.status.status_code is StatusCode.UNSET
    nodes = _nodes(otel)
    assert set(nodes) == {"first", "second"}
    for node in nodes.values():
        assert node.parent is not None and node.parent.span_id == run.context.span_id
        assert node.context.trace_id == run.context.trace_id
        assert node.attributes is not None and node.attributes["tsumugi.node.state"] == "COMPLETED"
    second = nodes["second"].attributes
    assert second is not None and second["tsumugi.binding"] == "Other" and second["tsumugi.run.id"] == run_id
    job_ids = {span.attributes["tsumugi.job.id"] for span in otel.spans("tsumugi.attempt") if span.attributes}
    assert {span.attributes["tsumugi.job.id"] for span in nodes.values() if span.attributes} == job_ids
    assert otel.total("tsumugi.run.settled", flow="CHAIN", run_state="COMPLETED") == 1


async def test_a_failed_run_and_its_failed_node_are_errors(otel: Otel, local: Local) -> None:
    await local.app.start(local.env, "CHAIN", {"fail": 5}, id="bad")
    [run] = await polling.until(lambda: otel.spans("tsumugi.run"), "the run's span", DEADLINE_S)
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None and run.attributes["tsumugi.run.state"] == "FAILED"
    nodes = _nodes(otel)
    assert nodes["first"].status.status_code is StatusCode.UNSET
    assert nodes["second"].status.status_code is StatusCode.ERROR
    assert nodes["second"].status.description == "RuntimeError: attempt 1 fails on purpose"
    assert otel.total("tsumugi.run.settled", flow="CHAIN", run_state="FAILED") == 1


def _nodes(otel: Otel) -> dict[str, ReadableSpan]:
    spans = otel.spans("tsumugi.node")
    return {span.attributes["tsumugi.node.id"]: span for span in spans if span.attributes}
