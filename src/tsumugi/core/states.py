"""The seven job states, the moves between them, and what a report does to a job.

The transition table is ADR-0007's state machine as data; a run's and its nodes' state names are here
too. ``decide_report`` is a pure function of an in-flight job's fields and a report (ADR-0046): it says
which state the job moves to, and the shard applies it.

```
            enqueue
               |
               v
   +------> SCHEDULED ---cancel/expire---> CANCELLED
   |           |                              ^
   |        dispatch                          | cancel request confirmed
   |           v                              |
   |        QUEUED ---claim---> RUNNING ------+
   |         |  \\                 |
   |  retry/reap \\---------------+---> COMPLETED
   |         |                    +---> FAILED  --manual retry--> SCHEDULED
   +---------+                    +---> STALLED --manual retry--> SCHEDULED
```
"""
# J-71..J-73, J-76, J-90, J-92, J-94, J-95, J-114, J-135, F-26, F-29, F-33

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Final, Literal, TypeAlias, TypedDict, get_args

from tsumugi.core import wire_format
from tsumugi.core.backoff import DEFAULT, RetryBackoff, next_retry
from tsumugi.errors import InvalidTransitionError


class JobState(StrEnum):
    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    STALLED = "STALLED"


# The same seven names as a type, for the ``state`` of a stored row (a plain ``str`` at run time).
JobStateName: TypeAlias = Literal[
    "SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"
]
assert set(get_args(JobStateName)) == {state.value for state in JobState}  # one list, said twice

ACTIVE_STATES: Final = frozenset({JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING})
TERMINAL_STATES: Final = frozenset(
    {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.STALLED}
)
IN_FLIGHT_STATES: Final = frozenset({JobState.QUEUED, JobState.RUNNING})
RETRYABLE_STATES: Final = frozenset({JobState.FAILED, JobState.STALLED})
# The terminal states a failure ends in: kept for ``failed_retention_ms``, told to ``onFailure``.
FAILURE_STATES: Final = RETRYABLE_STATES

# J-92 table, with the newer release's QUEUED/RUNNING -> CANCELLED (J-135, J-41).
TRANSITIONS: Final[dict[JobState, frozenset[JobState]]] = {
    JobState.SCHEDULED: frozenset({JobState.QUEUED, JobState.CANCELLED}),
    JobState.QUEUED: frozenset(
        {
            JobState.RUNNING,
            JobState.COMPLETED,
            JobState.FAILED,
            JobState.SCHEDULED,
            JobState.STALLED,
            JobState.CANCELLED,
        }
    ),
    JobState.RUNNING: frozenset(
        {JobState.COMPLETED, JobState.FAILED, JobState.SCHEDULED, JobState.STALLED, JobState.CANCELLED}
    ),
    JobState.FAILED: frozenset({JobState.SCHEDULED}),
    JobState.STALLED: frozenset({JobState.SCHEDULED}),
    JobState.COMPLETED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


# A flow node's states: a job's seven, plus PENDING (not started) and SKIPPED (never to run); a run's four.
# Names only: a node row or view holds a plain ``str`` at run time.
NodeStateName: TypeAlias = Literal[
    "PENDING", "SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"
]
RunStateName: TypeAlias = Literal["RUNNING", "COMPLETED", "FAILED", "CANCELLED"]

# A node is done (settled; the ``node_done`` counter, F-26) in one of these.
TERMINAL_NODE_STATES: Final = frozenset[NodeStateName](
    {"COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"}
)
# A node that "actually failed" for its run and its triggers (T-1); the ``node_failed`` counter counts
# only FAILED and STALLED ones (F-26).
FAILED_NODE_STATES: Final = frozenset[NodeStateName]({"FAILED", "STALLED", "CANCELLED"})
COUNTED_FAILED_NODE_STATES: Final = frozenset[NodeStateName]({"FAILED", "STALLED"})


def can_transition(from_state: str, to_state: str) -> bool:
    """True when the table allows ``from_state -> to_state``."""
    try:
        return JobState(to_state) in TRANSITIONS[JobState(from_state)]
    except ValueError:
        return False


def assert_transition(from_state: str, to_state: str) -> None:
    """Raise InvalidTransitionError unless the table allows the change."""
    if not can_transition(from_state, to_state):
        raise InvalidTransitionError(from_state, to_state)


# ---------------------------------------------------------------- what a report does (ADR-0046)

RESULT_LIMIT: Final = 8192  # J-71: UTF-16 code units of the stored result JSON
ERROR_LIMIT: Final = 2000  # J-73: characters of error text kept
RESULT_NOT_STORED: Final = "cannot store the result (over 8192 chars or not serializable)"  # J-72


class ReportedJob(TypedDict):
    """The fields of an in-flight job that decide a report's effect.

    A plain dict: the shard's job row has every one of them, so it is passed as it was read, with no
    value built per report.
    """

    state: JobStateName
    attempts: int
    max_attempts: int
    run_id: str | None
    cancel_requested_at: int | None


@dataclass(frozen=True, slots=True)
class Never:
    """The performer said this failure is permanent: no retry, whatever attempts are left."""


@dataclass(frozen=True, slots=True)
class At:
    """The performer chose when to retry this failure (epoch ms), instead of the backoff."""

    at_ms: int


Retry: TypeAlias = Never | At | None  # None: the backoff decides


@dataclass(frozen=True, slots=True)
class Completed:
    """An attempt that returned ``result``; a run's job may also ask for ``spawns``."""

    result: object = None
    spawns: Sequence[object] | None = None
    attempt: int | None = None  # which attempt the consumer reports (None: not said)


@dataclass(frozen=True, slots=True)
class Failed:
    """An attempt that raised or gave up; ``error`` is what it said."""

    error: object = None
    retry: Retry = None
    attempt: int | None = None


AttemptOutcome: TypeAlias = Completed | Failed
_NEVER: Final = Never()


def outcome_from_wire(wire: Mapping[str, object]) -> AttemptOutcome:
    """The consumer's report (``{ok, result, spawns?, attempt?}`` or ``{ok, error?, retry?, attempt?}``)."""
    # J-119, J-76
    attempt = wire.get("attempt")
    reported = attempt if isinstance(attempt, int) else None
    if wire.get("ok"):
        spawns = wire.get("spawns")
        result = wire.get("result")
        if result is None and spawns is None:
            return _returned_nothing(reported)
        return Completed(result, spawns if isinstance(spawns, (list, tuple)) else None, reported)
    retry = wire.get("retry")
    chosen: Retry = None
    if isinstance(retry, Mapping):
        kind = retry.get("kind")
        if kind == "never":
            chosen = _NEVER
        elif kind == "at":
            chosen = At(int(retry["at"]))
    return Failed(wire.get("error"), chosen, reported)


@lru_cache(maxsize=64)
def _returned_nothing(attempt: int | None) -> Completed:
    """The outcome of an attempt that returned nothing and spawned nothing, most attempts' report: one
    shared value per attempt number, since building a frozen dataclass costs more than looking one up."""
    return Completed(None, None, attempt)


@dataclass(frozen=True, slots=True)
class ReportEffect:
    """The transition a report causes.

    ``to_state`` is COMPLETED, SCHEDULED (retry at ``run_after``), FAILED or CANCELLED. ``log_state`` is
    the attempt row to write (None when none is written).
    """

    to_state: Literal["COMPLETED", "SCHEDULED", "FAILED", "CANCELLED"]
    attempts: int
    result: str | None = None
    error: str | None = None
    run_after: int | None = None
    log_state: Literal["COMPLETED", "FAILED"] | None = None


def encode_result(value: object) -> tuple[str | None, bool]:
    """``(text, stored)``: None maps to no result; too long or unserializable is not stored."""
    # J-71
    if value is None:
        return None, True
    try:
        text = wire_format.dumps(value)
    except (TypeError, ValueError):
        return None, False
    if wire_format.utf16_len(text) > RESULT_LIMIT:
        return None, False
    return text, True


def truncate_error(error: object) -> str | None:
    """The stored error text: the first 2 000 characters (code points in the port)."""
    # J-73
    if error is None:
        return None
    return str(error)[:ERROR_LIMIT]


def is_stale(job: ReportedJob, reported_attempt: object) -> bool:
    """A report naming another attempt than the one in flight is stale (ADR-0046)."""
    return isinstance(reported_attempt, int) and reported_attempt != job["attempts"] + 1


def _completed_log(attempts: int) -> Literal["COMPLETED"] | None:
    """The attempt row a success writes: only a success after a failed attempt has one."""
    # J-95
    return "COMPLETED" if attempts > 1 else None


@lru_cache(maxsize=64)
def _completed_without_result(attempts: int) -> ReportEffect:
    """The effect of a success with no result: one shared value per attempt count (it is immutable)."""
    return ReportEffect("COMPLETED", attempts, log_state=_completed_log(attempts))


def decide_report(
    job: ReportedJob, outcome: AttemptOutcome, now_ms: int, rand: float, backoff: RetryBackoff = DEFAULT
) -> ReportEffect | None:
    """The effect of ``outcome`` on ``job``, or None when the report is ignored (ADR-0046).

    ``backoff`` is the job's; only a failure with attempts left reads it.
    """
    # J-115
    if job["state"] not in IN_FLIGHT_STATES or is_stale(job, outcome.attempt):
        return None
    attempts = job["attempts"] + 1  # J-93: a reported attempt is finished
    match outcome:
        case Completed(result=result):
            if result is None:
                return _completed_without_result(attempts)
            text, stored = encode_result(result)
            if stored or job["run_id"] is None:
                return ReportEffect("COMPLETED", attempts, result=text, log_state=_completed_log(attempts))
            error: object = RESULT_NOT_STORED  # J-72: a flow node's result must be stored: a failure
            retry: Retry = None
        case Failed(error=error, retry=retry):
            pass
    error_text = truncate_error(error)
    if job["cancel_requested_at"] is not None:  # J-135: a failure after the request is not retried
        return ReportEffect("CANCELLED", attempts, error=error_text, log_state="FAILED")
    if isinstance(retry, Never):  # J-76: permanent failure
        return ReportEffect("FAILED", attempts, error=error_text, log_state="FAILED")
    planned = next_retry(attempts, job["max_attempts"], backoff, now_ms, rand)
    if planned.exhausted:
        return ReportEffect("FAILED", attempts, error=error_text, log_state="FAILED")
    run_after = retry.at_ms if isinstance(retry, At) else planned.run_after  # J-76: its own retry time
    return ReportEffect("SCHEDULED", attempts, error=error_text, run_after=run_after, log_state="FAILED")
