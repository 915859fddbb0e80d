"""What a report does (J-71..J-73, J-76, J-94, J-95, J-114, J-135; ADR-0046)."""

from __future__ import annotations

from collections.abc import Mapping

from tsumugi.core.backoff import backoff_from_wire
from tsumugi.core.states import (
    RESULT_NOT_STORED,
    At,
    Completed,
    Failed,
    Never,
    ReportedJob,
    ReportEffect,
    decide_report,
    encode_result,
    outcome_from_wire,
    truncate_error,
)

NOW = 10_000
FIXED = {"kind": "fixed", "delayMs": 1000}


def job(**kw: object) -> ReportedJob:
    base: dict[str, object] = {
        "state": "QUEUED",
        "attempts": 0,
        "max_attempts": 3,
        "run_id": None,
        "cancel_requested_at": None,
    }
    base.update(kw)
    return base  # type: ignore[return-value]


def decide(reported: ReportedJob, wire: Mapping[str, object], now: int, rand: float) -> ReportEffect | None:
    """The report as the shard reads it: decoded from the consumer's wire dict once; a fixed backoff."""
    return decide_report(reported, outcome_from_wire(wire), now, rand, backoff_from_wire(FIXED))


def test_first_success_skips_attempt_row() -> None:
    # J-95: success on the first attempt writes no attempt row
    effect = decide(job(), {"ok": True, "result": {"a": 1}}, NOW, 0.5)
    assert effect is not None
    assert (effect.to_state, effect.attempts, effect.result, effect.log_state) == (
        "COMPLETED",
        1,
        '{"a":1}',
        None,
    )


def test_later_success_logs_attempt() -> None:
    # J-95
    effect = decide(job(attempts=1), {"ok": True, "result": None}, NOW, 0.5)
    assert effect is not None and effect.log_state == "COMPLETED" and effect.result is None


def test_result_limits() -> None:
    # J-71: over 8192 UTF-16 units or unserializable -> not stored; None -> NULL
    assert encode_result("x" * 8190) == ('"' + "x" * 8190 + '"', True)
    assert encode_result("x" * 8191) == (None, False)
    assert encode_result("😀" * 4095)[1] is True  # 8190 units + 2 quotes = 8192
    assert encode_result("😀" * 4096)[1] is False
    assert encode_result({1, 2}) == (None, False)
    assert encode_result(None) == (None, True)


def test_unstorable_result_completes_outside_runs_and_fails_inside() -> None:
    # J-71, J-72
    outside = decide(job(), {"ok": True, "result": "x" * 9000}, NOW, 0.5)
    assert outside is not None and outside.to_state == "COMPLETED" and outside.result is None
    inside = decide(job(run_id="r1"), {"ok": True, "result": "x" * 9000}, NOW, 0.5)
    assert inside is not None and inside.to_state == "SCHEDULED" and inside.error == RESULT_NOT_STORED


def test_failure_with_attempts_left_retries_at_backoff() -> None:
    # J-94 reported path: attempts+1 < max -> retry at backoff
    effect = decide(job(), {"ok": False, "error": "boom"}, NOW, 0.5)
    assert effect is not None
    assert (effect.to_state, effect.attempts, effect.run_after, effect.log_state) == (
        "SCHEDULED",
        1,
        NOW + 1000,
        "FAILED",
    )


def test_failure_exhausted() -> None:
    # J-94: attempts_after >= max -> FAILED
    effect = decide(job(attempts=2), {"ok": False, "error": "boom"}, NOW, 0.5)
    assert effect is not None and effect.to_state == "FAILED" and effect.attempts == 3


def test_performer_chosen_retry() -> None:
    # J-76: never -> FAILED now; at -> that time instead of the backoff
    never = decide(job(), {"ok": False, "retry": {"kind": "never"}}, NOW, 0.5)
    assert never is not None and never.to_state == "FAILED"
    at = decide(job(), {"ok": False, "retry": {"kind": "at", "at": NOW + 99}}, NOW, 0.5)
    assert at is not None and at.run_after == NOW + 99
    last = decide(job(attempts=2), {"ok": False, "retry": {"kind": "at", "at": NOW + 99}}, NOW, 0.5)
    assert last is not None and last.to_state == "FAILED"


def test_failure_after_cancel_request_cancels() -> None:
    # J-135
    effect = decide(job(cancel_requested_at=5), {"ok": False, "error": "stop"}, NOW, 0.5)
    assert effect is not None and effect.to_state == "CANCELLED"
    success = decide(job(cancel_requested_at=5), {"ok": True, "result": 1}, NOW, 0.5)
    assert success is not None and success.to_state == "COMPLETED"


def test_ignored_reports() -> None:
    # J-115: not in flight; ADR-0046: another attempt's report is stale
    assert decide(job(state="SCHEDULED"), {"ok": True}, NOW, 0.5) is None
    assert decide(job(state="COMPLETED"), {"ok": False}, NOW, 0.5) is None
    assert decide(job(attempts=1), {"ok": True, "attempt": 1}, NOW, 0.5) is None
    assert decide(job(attempts=1), {"ok": True, "attempt": 2}, NOW, 0.5) is not None


def test_error_truncated_to_2000() -> None:
    # J-73
    assert truncate_error("e" * 5000) == "e" * 2000
    assert truncate_error(None) is None


def test_report_decoded_once_from_the_wire() -> None:
    # J-119, J-76: the consumer's dict becomes Completed | Failed; a retry is Never | At | None
    assert outcome_from_wire({"ok": True, "result": {"a": 1}, "attempt": 2}) == Completed({"a": 1}, None, 2)
    spawns = [{"id": "a", "binding": "MAIL"}]
    assert outcome_from_wire({"ok": True, "result": None, "spawns": spawns}).spawns == spawns  # type: ignore[union-attr]
    assert outcome_from_wire({"ok": False, "error": "boom"}) == Failed("boom", None, None)
    assert outcome_from_wire({"ok": False, "retry": {"kind": "never"}}).retry == Never()  # type: ignore[union-attr]
    assert outcome_from_wire({"ok": False, "retry": {"kind": "at", "at": 7}}) == Failed(None, At(7), None)
    assert outcome_from_wire({"ok": False, "retry": {"kind": "later"}}) == Failed(None, None, None)
    assert outcome_from_wire({"ok": False, "attempt": "2"}).attempt is None  # only an int names an attempt
