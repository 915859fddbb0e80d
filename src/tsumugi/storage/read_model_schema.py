"""The read model's shape: migration file names, the columns projection writes and how a value binds."""
# D-1..D-10, J-193

from __future__ import annotations

from typing import Final

from tsumugi.core import wire_format
from tsumugi.core.states import TERMINAL_STATES, JobState
from tsumugi.ports import SqlValue

# D-10: the shipped migrations, in name order; the migration check and the files must agree exactly.
EXPECTED_MIGRATIONS: Final[tuple[str, ...]] = (
    "0001_create_job_read_model.sql",
    "0002_add_attempt_log.sql",
    "0003_add_result.sql",
    "0004_create_run_read_model.sql",
    "0005_add_subflow.sql",
    "0006_add_run_after.sql",
    "0007_add_key_indexes.sql",
    "0008_add_progress.sql",
)

# J-193: every D1 `job` column, in the order the upsert binds them.
JOB_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "seq",
    "binding",
    "state",
    "priority",
    "attempts",
    "max_attempts",
    "concurrency_key",
    "unique_key",
    "guarantee",
    "created_at",
    "updated_at",
    "dispatched_at",
    "run_after",
    "progress",
    "payload",
    "result",
    "run_id",
    "node_id",
    "attempts_log",
)
# D-9: columns a later snapshot never changes.
JOB_FROZEN_COLUMNS: Final = frozenset({"id", "created_at", "binding", "guarantee"})

RUN_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "seq",
    "flow",
    "state",
    "input",
    "node_total",
    "node_done",
    "node_failed",
    "created_at",
    "updated_at",
    "parent_run_id",
    "parent_node_id",
)
RUN_FROZEN_COLUMNS: Final = frozenset({"id", "created_at", "flow"})

RUN_NODE_COLUMNS: Final[tuple[str, ...]] = (
    "run_id",
    "node_id",
    "seq",
    "binding",
    "state",
    "container",
    "parent",
    "origin",
    "after",
    "job_id",
    "child_run_id",
    "result",
    "error",
    "position",
    "created_at",
    "updated_at",
)
RUN_NODE_FROZEN_COLUMNS: Final = frozenset({"run_id", "node_id", "created_at", "binding"})

# ADR-0155: what a sleep or wait-for-event node waits for lives beside ``run_node``, in a table created on
# demand like the local metrics: the shipped migrations stay the original's eight (D-10), so the migration
# check and its 503 text are unchanged.
RUN_NODE_WAIT_COLUMNS: Final[tuple[str, ...]] = ("run_id", "node_id", "seq", "wait", "wait_event", "wake_at")
RUN_NODE_WAIT_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS run_node_wait (run_id TEXT NOT NULL, node_id TEXT NOT NULL, "
    "seq INTEGER NOT NULL, wait TEXT NOT NULL, wait_event TEXT, wake_at INTEGER, "
    "PRIMARY KEY (run_id, node_id))"
)

# The job states as plain text in the enum's order (SCHEDULED .. STALLED): bound parameters and labels.
ALL_JOB_STATES: Final[tuple[str, ...]] = tuple(state.value for state in JobState)
TERMINAL_JOB_STATES: Final[tuple[str, ...]] = tuple(s for s in ALL_JOB_STATES if s in TERMINAL_STATES)


def upsert_sql(table: str, columns: tuple[str, ...], key: tuple[str, ...], frozen: frozenset[str]) -> str:
    """``INSERT... ON CONFLICT DO UPDATE`` that only moves forward: ``excluded.seq > <table>.seq``."""
    # D-9
    names = ", ".join(columns)
    marks = ", ".join("?" for _ in columns)
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in frozen)
    return (
        f"INSERT INTO {table} ({names}) VALUES ({marks}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates} WHERE excluded.seq > {table}.seq"
    )


def json_text(value: object) -> str | None:
    """Stored JSON columns hold text; a snapshot may carry the text or the decoded value."""
    #
    if value is None:
        return None
    return value if isinstance(value, str) else wire_format.dumps(value)


def sql_value(value: object) -> SqlValue:
    """A snapshot's value as a bound parameter: a bool as 0 or 1, a JSON value other than a scalar as text."""
    if isinstance(value, bool):
        return int(value)
    if value is None or isinstance(value, int | float | str | bytes):
        return value
    return wire_format.dumps(value)
