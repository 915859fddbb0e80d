"""The DO SQL executor and alarm inside Pyodide, against a JS object shaped like ``ctx.storage``.

What JavaScript receives is checked in JavaScript: booleans arrive as numbers (DO SQL would store a JS
boolean as the TEXT 'true'), None as null, bytes as Uint8Array; ``transactionSync`` calls back into Python
and a Python error rolls it back and comes out unchanged (ADR-0082, PLATFORM.md §3.7).
"""

from __future__ import annotations

import pytest
from pyodide.code import run_js

from tsumugi.runtimes.cloudflare.alarm import DurableObjectAlarm
from tsumugi.runtimes.cloudflare.do_sql import DurableObjectSqlExecutor

FAKE_STORAGE_JS = """
(() => {
  const seen = [];
  const storage = {
    seen,
    state: { rolledBack: 0, alarm: null, destroyed: 0 },
    sql: {
      exec(sql, ...args) {
        const kind = (a) => (a === null ? "null" : a instanceof Uint8Array ? "bytes" : typeof a);
        seen.push({ sql, types: args.map(kind) });
        return {
          raw() { return { toArray() { return [[1, "a", null, 2.5]]; } }; },
          rowsRead: 1,
          rowsWritten: 2,
        };
      },
    },
    transactionSync(fn) {
      try { return fn(); } catch (e) { storage.state.rolledBack += 1; throw e; }
    },
    async getAlarm() { return storage.state.alarm; },
    async setAlarm(at) { storage.state.alarm = at; seen.push({ alarmType: typeof at }); },
    async deleteAlarm() { storage.state.alarm = null; },
  };
  return storage;
})()
"""


def test_parameters_reach_javascript_with_durable_object_types() -> None:
    storage = run_js(FAKE_STORAGE_JS)
    sql = DurableObjectSqlExecutor(storage)
    rows = sql.execute("SELECT ?, ?, ?, ?, ?, ?", [True, 3, 2.5, "s", None, b"\x00"])
    assert rows == [(1, "a", None, 2.5)]
    assert storage.seen[0].types.to_py() == ["number", "number", "number", "string", "null", "bytes"]
    assert (sql.rows_read, sql.rows_written) == (1, 2)


def test_transaction_sync_calls_back_and_a_python_error_rolls_back() -> None:
    storage = run_js(FAKE_STORAGE_JS)
    sql = DurableObjectSqlExecutor(storage)
    assert sql.transaction(lambda: sql.execute("SELECT 1")) == [(1, "a", None, 2.5)]

    def fails() -> None:
        sql.execute("INSERT INTO t VALUES (1)")
        raise LookupError("performer bug")

    with pytest.raises(LookupError, match="performer bug"):
        sql.transaction(fails)
    assert storage.state.rolledBack == 1


async def test_alarm_crosses_as_a_js_number() -> None:
    storage = run_js(FAKE_STORAGE_JS)
    alarm = DurableObjectAlarm(storage)
    await alarm.set_alarm(1_764_460_800_123)
    assert await alarm.get_alarm() == 1_764_460_800_123
    assert storage.seen[-1].alarmType == "number"
    await alarm.delete_alarm()
    assert await alarm.get_alarm() is None
