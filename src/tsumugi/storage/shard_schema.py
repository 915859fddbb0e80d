"""The job shard's SQLite schema, in one place (spec 8.1; ADR-0042 shapes it for rows written).

Every table is ``WITHOUT ROWID`` where it has a natural key, so the primary key *is* the table and costs
no second b-tree entry. ``job`` has one covering "lane" index that every job is in exactly once:

- ``SCHEDULED`` + ``ready=1``: ``lane_at`` = priority; streams per priority ordered by ``created_at, id``
  (ADR-0043: a k-way merge gives the exact aged order of *all* ready jobs);
- ``SCHEDULED`` + ``ready=0``: ``lane_at`` = ``run_after`` (waiting for its time);
- ``QUEUED``/``RUNNING``: ``lane_at`` = silence origin + ``timeout_ms`` (the reaper's order, grace added
  at query time because the policy may change), or the cancel request time if earlier;
- terminal states: ``lane_at`` = the time it finished (the sweep's order).

A transition moves the job's single lane entry, so it writes the row plus one index entry.
"""
# J-135, J-170

from __future__ import annotations

from typing import Final

from tsumugi.ports import SqlExecutor

SHARD_DDL: Final[tuple[str, ...]] = (
    """CREATE TABLE IF NOT EXISTS job (
  id TEXT PRIMARY KEY NOT NULL,
  binding TEXT NOT NULL,
  state TEXT NOT NULL,
  ready INTEGER NOT NULL DEFAULT 0,
  lane_at NUMERIC NOT NULL,
  priority NUMERIC NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  concurrency_key TEXT,
  unique_key TEXT,
  guarantee TEXT NOT NULL,
  timeout_ms INTEGER NOT NULL,
  backoff TEXT NOT NULL,
  run_after INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  dispatched_at INTEGER,
  heartbeat_at INTEGER,
  progress REAL,
  payload TEXT NOT NULL,
  result TEXT,
  run_id TEXT,
  node_id TEXT,
  expires_at INTEGER,
  traceparent TEXT,
  cancel_requested_at INTEGER,
  version INTEGER NOT NULL
) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS job_lane ON job(state, ready, lane_at, created_at)",
    # Only keyed in-flight jobs are in this index, so unkeyed jobs pay nothing for it (ADR-0042).
    "CREATE INDEX IF NOT EXISTS job_key_in_flight ON job(concurrency_key) "
    "WHERE concurrency_key IS NOT NULL AND state IN ('QUEUED', 'RUNNING')",
    "CREATE TABLE IF NOT EXISTS unique_key ("
    "key TEXT PRIMARY KEY NOT NULL, job_id TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS unique_key_expires ON unique_key(expires_at)",
    "CREATE TABLE IF NOT EXISTS setting (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS attempt ("
    "job_id TEXT NOT NULL, attempt INTEGER NOT NULL, state TEXT NOT NULL, started_at INTEGER, "
    "finished_at INTEGER NOT NULL, error TEXT, PRIMARY KEY (job_id, attempt)) WITHOUT ROWID",
    # The outbox is a dirty set of job ids; the snapshot is read from the job row when projected.
    "CREATE TABLE IF NOT EXISTS outbox (job_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID",
    # New jobs not yet projected, in creation order: their first projection waits (ADR-0119).
    "CREATE TABLE IF NOT EXISTS fresh ("
    "created_at INTEGER NOT NULL, job_id TEXT NOT NULL, PRIMARY KEY (created_at, job_id)) WITHOUT ROWID",
    # A run notification's fields are columns; ``event`` holds only a completed attempt's spawns as JSON
    # (empty without them). A row an earlier version wrote has no job_id and the whole event there.
    "CREATE TABLE IF NOT EXISTS run_notify ("
    "seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, event TEXT NOT NULL, "
    "node_id TEXT, job_id TEXT, state TEXT, result TEXT, error TEXT)",
    "CREATE TABLE IF NOT EXISTS notice ("
    "seq INTEGER PRIMARY KEY, target TEXT NOT NULL, notice_id TEXT NOT NULL, payload TEXT NOT NULL, "
    "traceparent TEXT)",
    "CREATE TABLE IF NOT EXISTS key_bucket ("
    "key TEXT PRIMARY KEY NOT NULL, tokens REAL NOT NULL, refilled_at INTEGER NOT NULL) WITHOUT ROWID",
    # ADR-0149: a live debounce window per key; ``until`` is the job's run_after, ``max_at`` its hard end.
    "CREATE TABLE IF NOT EXISTS debounce_key ("
    "key TEXT PRIMARY KEY NOT NULL, job_id TEXT NOT NULL, until INTEGER NOT NULL, max_at INTEGER) "
    "WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS debounce_key_until ON debounce_key(until)",
    # ADR-0150: a throttle key's bucket as one number, the theoretical arrival time of its next token.
    "CREATE TABLE IF NOT EXISTS throttle_key ("
    "key TEXT PRIMARY KEY NOT NULL, tat REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS throttle_key_tat ON throttle_key(tat)",
)

# Columns run_notify gained after its first release, added to older storage on start.
RUN_NOTIFY_ADDED_COLUMNS: Final = ("node_id", "job_id", "state", "result", "error")

# Index entries one row of each table carries, for the rows-written estimate (ADR-0042).
INDEX_ENTRIES: Final[dict[str, int]] = {"job": 1, "unique_key": 1}


def ensure_shard_schema(sql: SqlExecutor) -> None:
    """Create every table and index if missing; idempotent, run on every instance start."""

    def create() -> None:
        for statement in SHARD_DDL:
            sql.execute(statement)
        present = {str(row[1]) for row in sql.execute("PRAGMA table_info(run_notify)")}
        for column in RUN_NOTIFY_ADDED_COLUMNS:
            if column not in present:
                sql.execute(f"ALTER TABLE run_notify ADD COLUMN {column} TEXT")

    sql.transaction(create)
