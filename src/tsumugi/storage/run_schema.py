"""The run coordinator's SQLite schema.

One run per database: ``run`` has exactly one row, ``node`` one row per static or dynamic node, and
``run_outbox`` the snapshots waiting to be projected into the read model, ``run_event`` the events sent
to the run's wait-for-event nodes.
"""
# F-23..F-25, F-27

from __future__ import annotations

from typing import Final

from tsumugi.ports import SqlExecutor

RUN_DDL: Final = """CREATE TABLE IF NOT EXISTS run (
  id TEXT PRIMARY KEY NOT NULL,
  flow TEXT NOT NULL,
  state TEXT NOT NULL,
  input TEXT NOT NULL,
  shape TEXT NOT NULL,
  cancelling INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)"""

NODE_DDL: Final = """CREATE TABLE IF NOT EXISTS node (
  id TEXT PRIMARY KEY NOT NULL,
  binding TEXT NOT NULL,
  state TEXT NOT NULL,
  container INTEGER NOT NULL DEFAULT 0,
  parent TEXT,
  origin TEXT NOT NULL,
  after TEXT NOT NULL DEFAULT '[]',
  payload TEXT,
  options TEXT,
  job_id TEXT,
  result TEXT,
  error TEXT,
  seq INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)"""

# ADR-0148: events sent to the run, kept until the run is swept; ``node_id`` is the node that took one.
EVENT_DDL: Final = """CREATE TABLE IF NOT EXISTS run_event (
  event TEXT PRIMARY KEY NOT NULL,
  payload TEXT,
  received_at INTEGER NOT NULL,
  node_id TEXT
)"""

OUTBOX_DDL: Final = """CREATE TABLE IF NOT EXISTS run_outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  snapshot TEXT NOT NULL
)"""

# F-27: columns added after the first release are listed here and added to older storage idempotently.
RUN_ADDED_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("parent_run_id", "TEXT"),
    ("parent_node_id", "TEXT"),
    ("depth", "INTEGER NOT NULL DEFAULT 0"),
    ("parent_notified", "INTEGER NOT NULL DEFAULT 0"),
    ("deadline_ms", "INTEGER"),
    ("deadline_at", "INTEGER"),
    ("expired", "INTEGER NOT NULL DEFAULT 0"),
)
NODE_ADDED_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("subflow", "TEXT"),
    ("child_run_id", "TEXT"),
    ("trigger", "TEXT NOT NULL DEFAULT 'success'"),  # T-1, pinned with the edges (ADR-0070)
    # ADR-0147: a sleep or wait-for-event node; kind and event are pinned at start, the rest as it starts.
    ("wait_kind", "TEXT"),
    ("wait_event", "TEXT"),
    ("wake_at", "INTEGER"),
    ("on_timeout", "TEXT"),
)

INDEXES: Final = (
    "CREATE INDEX IF NOT EXISTS node_parent ON node(parent)",
    "CREATE INDEX IF NOT EXISTS node_order ON node(seq, id)",
    # ADR-0147: only waiting nodes carry these, so the partial indexes cost nothing for job nodes.
    "CREATE INDEX IF NOT EXISTS node_wake ON node(wake_at) WHERE wake_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS node_event ON node(wait_event) WHERE wait_event IS NOT NULL",
)


def _columns(sql: SqlExecutor, table: str) -> set[str]:
    return {str(row[1]) for row in sql.execute(f"PRAGMA table_info({table})")}


def ensure_run_schema(sql: SqlExecutor) -> None:
    """Create the tables, then add any column an older database lacks."""
    # F-27
    for ddl in (RUN_DDL, NODE_DDL, OUTBOX_DDL, EVENT_DDL):
        sql.execute(ddl)
    for table, added in (("run", RUN_ADDED_COLUMNS), ("node", NODE_ADDED_COLUMNS)):
        present = _columns(sql, table)
        for name, decl in added:
            if name not in present:
                sql.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
    for ddl in INDEXES:
        sql.execute(ddl)
    # No query picks nodes by state alone, and each move of a node rewrote its entry in this index.
    sql.execute("DROP INDEX IF EXISTS node_state")
