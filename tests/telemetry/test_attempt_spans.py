"""Enqueue and attempt spans on the local runtime: parent and child through the job's traceparent."""

from __future__ import annotations

from opentelemetry.trace import SpanKind, StatusCode
from tests import polling
from tests.telemetry.conftest import DEADLINE_S, SEEN, Local, Otel

GIVEN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _traceparent(span: object) -> str:
    context = span.get_span_context()  # type: ignore[attr-defined]
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


async def test_the_attempt_is_a_child_of_the_enqueue_in_the_callers_trace(otel: Otel, local: Local) -> None:
    # J-40 carried by OpenTelemetry: request -> tsumugi.enqueue -> tsumugi.attempt -> the performer's span
    with otel.tracer.start_as_current_span("request") as request:
        job_id = await local.app.enqueue(local.env, binding="Work", payload={})
    await local.settled(job_id, "COMPLETED")
    [enqueue] = otel.spans("tsumugi.enqueue")
    [attempt] = otel.spans("tsumugi.attempt")
    [work] = otel.spans("work")
    assert enqueue.parent is not None and enqueue.parent.span_id == request.get_span_context().span_id
    assert enqueue.kind is SpanKind.PRODUCER
    assert dict(enqueue.attributes or {}) == {
        "tsumugi.binding": "Work",
        "tsumugi.job.count": 1,
        "tsumugi.job.id": job_id,
    }
    assert attempt.context.trace_id == request.get_span_context().trace_id
    assert attempt.parent is not None and attempt.parent.span_id == enqueue.context.span_id
    assert attempt.kind is SpanKind.CONSUMER
    assert dict(attempt.attributes or {}) == {
        "tsumugi.binding": "Work",
        "tsumugi.job.id": job_id,
        "tsumugi.attempt": 1,
        "tsumugi.guarantee": "at-least-once",
        "tsumugi.outcome": "success",
    }
    assert attempt.status.status_code is StatusCode.UNSET
    # The performer's own span nests under the attempt; the job kept the enqueue span as its traceparent.
    assert work.parent is not None and work.parent.span_id == attempt.context.span_id
    assert SEEN[0].traceparent == _traceparent(enqueue)


async def test_a_given_traceparent_is_kept_and_parents_the_attempt(otel: Otel, local: Local) -> None:
    job_id = await local.app.enqueue(
        local.env, binding="Work", payload={}, traceparent=GIVEN, guarantee="at-most-once"
    )
    await local.settled(job_id, "COMPLETED")
    [attempt] = otel.spans("tsumugi.attempt")
    assert f"{attempt.context.trace_id:032x}" == GIVEN.split("-")[1]
    assert attempt.parent is not None and f"{attempt.parent.span_id:016x}" == GIVEN.split("-")[2]
    assert attempt.attributes is not None and attempt.attributes["tsumugi.guarantee"] == "at-most-once"
    assert SEEN[0].traceparent == GIVEN


async def test_enqueue_many_traces_one_span_for_the_batch(otel: Otel, local: Local) -> None:
    ids = await local.app.enqueue_many(
        local.env, [{"binding": "Work", "payload": {}}, {"binding": "Other", "payload": {}}]
    )
    for job_id in ids:
        await local.settled(job_id, "COMPLETED")
    [enqueue] = otel.spans("tsumugi.enqueue")
    assert dict(enqueue.attributes or {}) == {"tsumugi.job.count": 2}  # two bindings: none is named
    attempts = otel.spans("tsumugi.attempt")
    assert {span.attributes["tsumugi.job.id"] for span in attempts if span.attributes} == set(ids)
    assert {span.parent.span_id for span in attempts if span.parent} == {enqueue.context.span_id}


async def test_a_failed_attempt_records_its_error_and_the_retry_is_counted(otel: Otel, local: Local) -> None:
    job_id = await local.app.enqueue(local.env, binding="Work", payload={"fail_until": 2}, max_attempts=3)
    await polling.until(lambda: otel.spans("tsumugi.attempt"), "the first attempt to end", DEADLINE_S)
    await local.settled(job_id, "SCHEDULED")  # the retry waits for its backoff
    await local.advance(5_000)  # the default backoff's first delay
    await local.settled(job_id, "COMPLETED")
    first, second = sorted(otel.spans("tsumugi.attempt"), key=lambda s: s.attributes["tsumugi.attempt"])  # type: ignore[index]
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "RuntimeError: attempt 1 fails on purpose"
    assert first.attributes is not None and first.attributes["tsumugi.outcome"] == "failure"
    [event] = first.events
    assert event.name == "exception" and event.attributes is not None
    assert event.attributes["exception.type"] == "RuntimeError"
    assert event.attributes["exception.message"] == "attempt 1 fails on purpose"
    assert second.attributes is not None and second.attributes["tsumugi.outcome"] == "success"
    assert first.parent == second.parent  # both attempts continue the enqueuer's trace
    assert otel.total("tsumugi.job.retries", binding="Work") == 1
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="SCHEDULED") == 2
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="QUEUED") == 2
    assert otel.total("tsumugi.job.state_changes", binding="Work", job_state="COMPLETED") == 1
    durations = otel.points("tsumugi.attempt.duration")
    assert sorted(dict(p.attributes)["tsumugi.outcome"] for p in durations) == ["failure", "success"]
