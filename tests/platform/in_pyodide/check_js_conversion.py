"""The adapter's JS <-> Python conversion, run inside Pyodide 0.28.2 against real JavaScript values.

Collected only by the Pyodide runner (tests/platform/test_pyodide_suite.py); ADR-0082 gives the rules.
"""

from __future__ import annotations

import js
import pytest
from pyodide.ffi import jsnull

from tsumugi.errors import UnsafeIntegerError
from tsumugi.runtimes.cloudflare import js_conversion
from tsumugi.runtimes.cloudflare.js_conversion import (
    MAX_SAFE_INTEGER,
    dict_rows,
    is_js_null,
    js_sql_args,
    rows_from_raw,
    sql_param,
    to_js_value,
    to_py_value,
)


def test_runs_in_pyodide() -> None:
    assert js_conversion.IN_PYODIDE


def test_dicts_become_plain_objects_and_lists_arrays() -> None:
    value = to_js_value({"jobId": "MAIL#0:abc", "attempts": [1, 2], "nested": {"ok": True}})
    assert js.Object.getPrototypeOf(value) == js.Object.prototype  # a plain object, not a Map
    assert js.Array.isArray(value.attempts)
    assert js.JSON.stringify(value) == '{"jobId":"MAIL#0:abc","attempts":[1,2],"nested":{"ok":true}}'


def test_none_becomes_null_and_null_comes_back_as_none() -> None:
    assert to_js_value(None) is jsnull
    assert js.JSON.stringify(to_js_value({"result": None})) == '{"result":null}'
    assert to_py_value(js.JSON.parse('{"a":null,"b":[null,1]}')) == {"a": None, "b": [None, 1]}
    assert is_js_null(jsnull) and is_js_null(None) and not is_js_null(0)


def test_js_values_become_plain_python() -> None:
    value = js.JSON.parse('{"id":"x","n":3,"f":2.5,"list":[{"k":"v"}],"t":true}')
    assert to_py_value(value) == {"id": "x", "n": 3, "f": 2.5, "list": [{"k": "v"}], "t": True}
    assert isinstance(to_py_value(value)["list"][0], dict)


def test_sql_parameters_follow_durable_object_rules() -> None:
    # DO SQL binds a JS boolean as TEXT 'true'; bind 1/0 like CPython sqlite3 (PLATFORM.md §3.7).
    assert sql_param(True) == 1 and sql_param(False) == 0
    assert sql_param(MAX_SAFE_INTEGER) == MAX_SAFE_INTEGER
    with pytest.raises(UnsafeIntegerError):
        sql_param(MAX_SAFE_INTEGER + 1)  # Pyodide would make it a BigInt, which DO SQL and D1 reject
    with pytest.raises(TypeError):
        sql_param({"a": 1})
    args = js_sql_args([1, 2.5, "s", None, b"\x00\x01", True])
    assert args[0] == 1 and args[1] == 2.5 and args[2] == "s" and args[5] == 1
    assert args[3] is jsnull
    assert args[4].constructor.name == "Uint8Array" and list(args[4].to_py()) == [0, 1]


def test_raw_rows_become_tuples_with_blobs_as_bytes() -> None:
    raw = js.JSON.parse('[[1,"a",null],[2.5,"b",0]]')
    assert rows_from_raw(raw) == [(1, "a", None), (2.5, "b", 0)]
    blob_rows = js.Array.new()
    row = js.Array.new()
    row.push(js.Uint8Array.new([7, 8]).buffer)
    blob_rows.push(row)
    assert rows_from_raw(blob_rows) == [(b"\x07\x08",)]


def test_d1_results_become_dicts() -> None:
    results = js.JSON.parse('[{"id":"a","seq":1,"result":null}]')
    assert dict_rows(results) == [{"id": "a", "seq": 1, "result": None}]


def test_callbacks_inside_objects_stay_callable_from_javascript() -> None:
    # service_binding.RemotePerformer hands its ctx callbacks to another Worker this way (J-63).
    from pyodide.code import run_js

    from tsumugi.runtimes.cloudflare.js_conversion import js_function

    ctx = to_js_value({"jobId": "Mailer#0:a", "heartbeat": js_function(lambda progress: progress * 2)})
    assert run_js("(ctx) => [ctx.jobId, ctx.heartbeat(0.25)]")(ctx).to_py() == ["Mailer#0:a", 0.5]
