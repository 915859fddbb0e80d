"""The seven job states and the transition table (ADR-0007's state machine as data); a run's and its
nodes' states.

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
# J-90, J-92, F-26, F-29, F-33

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal, TypeAlias, get_args

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
