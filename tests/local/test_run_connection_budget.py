"""However many run databases are in use, only a bounded number are connected at once (ADR-0132)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.local.open_files import fds_under

from tsumugi.errors import LocalRuntimeError
from tsumugi.runtimes.local.run_storage import ConnectionBudget, DeferredSqliteExecutor

RUNS = 60
LIMIT = 4
FDS_PER_DATABASE = 3  # the database, its WAL and its shared-memory index


def _executors(directory: Path, budget: ConnectionBudget, count: int) -> list[DeferredSqliteExecutor]:
    directory.mkdir(parents=True, exist_ok=True)
    return [DeferredSqliteExecutor(directory / f"run-{n}.sqlite3", budget) for n in range(count)]


def test_only_the_most_recently_used_databases_stay_connected(tmp_path: Path) -> None:
    budget = ConnectionBudget(LIMIT)
    executors = _executors(tmp_path / "runs", budget, RUNS)
    for n, sql in enumerate(executors):
        sql.execute("CREATE TABLE item (body TEXT)")
        sql.execute("INSERT INTO item (body) VALUES (?)", [f"row {n}"])
    budget.drain()
    assert fds_under(tmp_path / "runs") <= LIMIT * FDS_PER_DATABASE
    assert [sql.connected for sql in executors[-LIMIT:]] == [True] * LIMIT
    # Every database reconnects on its next statement and finds what it wrote
    bodies = [sql.execute("SELECT body FROM item")[0][0] for sql in executors]
    assert bodies == [f"row {n}" for n in range(RUNS)]
    budget.drain()
    assert fds_under(tmp_path / "runs") <= LIMIT * FDS_PER_DATABASE
    for sql in executors:
        sql.close()
    budget.drain()
    assert fds_under(tmp_path / "runs") == 0


def test_a_database_inside_its_transaction_keeps_its_connection(tmp_path: Path) -> None:
    budget = ConnectionBudget(1)
    first, second, third = _executors(tmp_path / "runs", budget, 3)
    first.execute("CREATE TABLE item (body TEXT)")

    def body() -> None:
        first.execute("INSERT INTO item (body) VALUES ('kept')")
        second.execute("CREATE TABLE other (x)")  # over the budget while first is in its transaction
        third.execute("CREATE TABLE other (x)")
        first.execute("INSERT INTO item (body) VALUES ('too')")

    first.transaction(body)
    assert first.execute("SELECT body FROM item") == [("kept",), ("too",)]
    budget.drain()


def test_a_budget_needs_room_for_one_connection() -> None:
    with pytest.raises(LocalRuntimeError, match="at least one"):
        ConnectionBudget(0)
