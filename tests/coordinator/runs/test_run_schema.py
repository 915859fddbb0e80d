"""Run storage evolution (F-27) and the result limit rule (F-46)."""

from __future__ import annotations

from tsumugi.core.flow.results import RESULT_ERROR, encode_result
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.run_schema import ensure_run_schema


def test_older_storage_gains_missing_columns_idempotently() -> None:
    # F-27
    sql = SqliteExecutor()
    sql.execute(
        "CREATE TABLE run (id TEXT PRIMARY KEY, flow TEXT NOT NULL, state TEXT NOT NULL, input TEXT NOT NULL,"
        " shape TEXT NOT NULL, cancelling INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,"
        " updated_at INTEGER NOT NULL)"
    )
    sql.execute(
        "INSERT INTO run (id, flow, state, input, shape, created_at, updated_at)"
        " VALUES ('F:1', 'F', 'RUNNING', '{}', '[]', 1, 1)"
    )
    ensure_run_schema(sql)
    ensure_run_schema(sql)
    columns = {row[1] for row in sql.execute("PRAGMA table_info(run)")}
    assert {"parent_run_id", "depth", "deadline_at", "expired", "parent_notified"} <= columns
    assert sql.execute("SELECT depth, expired FROM run") == [(0, 0)]


def test_result_limit_counts_utf16_units() -> None:
    # F-46: 8,192 chars of compact JSON, UTF-16 code units, non-serializable refused
    assert encode_result(None) == (None, None)
    assert encode_result({"a": 1}) == ('{"a":1}', None)
    exact = "x" * 8190  # plus two quotes = 8192
    assert encode_result(exact) == (f'"{exact}"', None)
    assert encode_result(exact + "x") == (None, RESULT_ERROR)
    assert encode_result("😀" * 4095)[1] is None  # 8,190 code units + two quotes
    assert encode_result("😀" * 4096)[1] == RESULT_ERROR  # 4,096 characters but 8,194 code units
    assert encode_result(object()) == (None, RESULT_ERROR)
    assert RESULT_ERROR == "cannot store the result (over 8192 chars or not serializable)"


def test_older_storage_loses_the_node_state_index_and_the_wait_queries_use_their_own() -> None:
    # F-27, ADR-0147: the index on state alone served no query and was rewritten by every node move.
    sql = SqliteExecutor()
    ensure_run_schema(sql)
    sql.execute("CREATE INDEX node_state ON node(state)")  # what an older release created
    ensure_run_schema(sql)
    indexes = {str(row[0]) for row in sql.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "node_state" not in indexes
    assert {"node_parent", "node_order", "node_wake"} <= indexes
    due = "SELECT id FROM node WHERE wake_at IS NOT NULL AND wake_at <= 5 AND state = 'RUNNING'"
    plan = " ".join(str(row[-1]) for row in sql.execute(f"EXPLAIN QUERY PLAN {due}"))
    assert "node_wake" in plan
