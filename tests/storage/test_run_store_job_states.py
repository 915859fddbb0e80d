"""A run's node states and job ids, answered from memory once its progress is loaded, match its rows."""
# F-45: what a job's terminal event is checked against

from __future__ import annotations

from tsumugi.coordinator.run_decisions import static_row
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.run_schema import ensure_run_schema
from tsumugi.storage.run_store import ChildRow, RunStore

NOW = 1_700_000_000_000


def _read_back(sql: SqliteExecutor, ids: list[str]) -> dict[str, tuple[str, str | None]]:
    """What a store that has loaded nothing reads from the rows."""
    return {k: (v.state, v.job_id) for k, v in RunStore(sql).job_states(ids).items()}


def _kept(store: RunStore, ids: list[str]) -> dict[str, tuple[str, str | None]]:
    store.live()  # loaded: answered from memory from here on
    return {k: (v.state, v.job_id) for k, v in store.job_states(ids).items()}


def test_job_states_follow_every_write_and_a_rollback() -> None:
    sql = SqliteExecutor()
    ensure_run_schema(sql)
    store = RunStore(sql)
    entries = [{"id": "fan", "binding": "Each", "container": True, "after": []}]
    store.insert_nodes([static_row(entry, n, NOW) for n, entry in enumerate(entries)])
    store.insert_children(
        "fan", "fanOut", [ChildRow(f"fan:{n}", "Each", "1", "{}") for n in range(3)], 1, NOW
    )
    ids = ["fan", "fan:0", "fan:1", "fan:2", "missing"]
    assert _kept(store, ids) == _read_back(sql, ids)
    store.set_job_ids({"fan:0": "Each#0:a", "fan:1": "Each#0:b"}, NOW)
    store.mark_in_state(["fan:0", "fan:1"], "PENDING", NOW, "SCHEDULED")
    store.settle_nodes([("fan:0", "COMPLETED", None, None)], NOW)
    store.update_node("fan:1", NOW, state="PENDING", job_id=None)  # a resumed node gets a new job
    assert _kept(store, ids) == _read_back(sql, ids)
    assert _kept(store, ids)["fan:0"] == ("COMPLETED", "Each#0:a")

    def fails() -> None:
        store.set_job_ids({"fan:2": "Each#0:c"}, NOW)
        raise RuntimeError("the write is rolled back")

    try:
        sql.transaction(fails)
    except RuntimeError:
        store.forget()  # as a coordinator does after a failed transaction
    assert _kept(store, ids) == _read_back(sql, ids)
    assert _kept(store, ids)["fan:2"] == ("PENDING", None)
