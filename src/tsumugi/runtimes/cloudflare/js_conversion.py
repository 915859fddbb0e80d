"""Every conversion between Python values and JavaScript values in the Workers adapter (ADR-0082).

Nothing else in ``runtimes/cloudflare`` calls ``to_js``/``to_py`` or touches ``jsnull``: values enter and
leave JavaScript through the functions here, so the type rules of Durable Object SQL, D1, Queues and RPC
live in one place:

- JS numbers are doubles. Durable Object SQL and D1 reject BigInt, which Pyodide makes of any int beyond
  2^53, so such ints are refused here with a clear error instead of failing deep in the runtime.
- Durable Object SQL binds a JS boolean as the TEXT ``'true'``/``'false'``; booleans bind as 0/1 instead,
  which is what CPython's sqlite3 does and what the engine's queries compare against.
- JS ``null`` and ``undefined`` both become ``None``.

Outside Pyodide (CPython unit tests driving fake bindings) there is no JavaScript: values pass through as
plain Python objects.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from tsumugi.errors import UnsafeIntegerError
from tsumugi.ports import Row, SqlValue

# Number.MAX_SAFE_INTEGER: the largest int a JS number holds exactly; Pyodide converts larger ints to BigInt.
MAX_SAFE_INTEGER: Final = 2**53 - 1
IN_PYODIDE: Final = "_pyodide_core" in sys.modules


def sql_param(value: Any) -> SqlValue:
    """One SQL parameter as Durable Object SQL and D1 must receive it (bool -> int, ints within 2^53)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise UnsafeIntegerError(
                f"integer {value} is outside ±(2^53 - 1): JavaScript SQL bindings cannot hold it exactly"
            )
        return value
    if value is None or isinstance(value, float | str | bytes):
        return value
    raise TypeError(f"cannot bind {type(value).__name__} as an SQL parameter")


def sql_params(params: Iterable[Any]) -> list[SqlValue]:
    """All parameters of one statement, converted by :func:`sql_param`."""
    return [sql_param(value) for value in params]


def js_sql_args(params: Iterable[Any]) -> list[Any]:
    """Positional arguments for ``sql.exec``/``stmt.bind``: bytes become ``Uint8Array``, None ``null``."""
    return [to_js_value(value) for value in sql_params(params)]


def to_js_value(value: Any) -> Any:
    """A Python value as JavaScript: dicts become plain objects, lists arrays, bytes ``Uint8Array``."""
    if not IN_PYODIDE:
        return value
    # to_js turns None into undefined, which JSON.stringify and structured clone drop from objects;
    # wire shapes need an explicit null (`"result": null`), so None becomes jsnull first.
    return _ffi().to_js(_with_jsnull(value), dict_converter=_js().Object.fromEntries, create_pyproxies=False)


def to_py_value(value: Any) -> Any:
    """A JavaScript value as plain Python data: objects become dicts, arrays lists, null/undefined None."""
    if value is None or _is_jsnull(value):
        return None
    to_py = getattr(value, "to_py", None)
    if to_py is None:
        return value
    return _replace_jsnull(to_py())


def rows_from_raw(raw_rows: Any) -> list[Row]:
    """The rows of ``cursor.raw().toArray()`` as tuples; ArrayBuffer blobs become ``bytes``."""
    rows = to_py_value(raw_rows) or []
    return [tuple(_sql_result(cell) for cell in row) for row in rows]


def dict_rows(js_rows: Any) -> list[dict[str, SqlValue]]:
    """The ``results`` of a D1 ``all()`` as dicts keyed by column name."""
    rows: Sequence[dict[str, Any]] = to_py_value(js_rows) or []
    return [{key: _sql_result(cell) for key, cell in row.items()} for row in rows]


def js_callback(fn: Callable[[], Any]) -> Any:
    """A Python function JavaScript may call once (``transactionSync``), released after the call."""
    if not IN_PYODIDE:
        return fn
    return _ffi().create_once_callable(fn)


def js_function(fn: Callable[..., Any]) -> Any:
    """A Python function JavaScript may call many times (an RPC callback); its arguments arrive as JS."""
    if not IN_PYODIDE:
        return fn
    return _ffi().create_proxy(fn)


def unwrap_sdk(obj: Any) -> Any:
    """The raw JS object behind a ``workers`` SDK wrapper (env, DO context, binding), or ``obj`` itself.

    The SDK converts arguments with its own rules (booleans stay booleans, large ints become BigInt); the
    adapter talks to the raw objects so that this module's rules apply instead (ADR-0082).
    """
    for attribute in ("_ctx", "_env", "_binding"):
        inner = obj.__dict__.get(attribute) if hasattr(obj, "__dict__") else None
        if inner is not None:
            return inner
    return obj


def _sql_result(cell: Any) -> SqlValue:
    if isinstance(cell, memoryview | bytearray):
        return bytes(cell)
    if IN_PYODIDE:
        if isinstance(cell, _ffi().JsProxy):
            # An ArrayBuffer (BLOB column) stays a JsProxy after to_py; copy it out.
            return bytes(cell.to_bytes())
    result: SqlValue = cell
    return result


def _ffi() -> Any:
    # ADR-0082: resolved at run time, so type checking never depends on which pyodide stubs are installed.
    return importlib.import_module("pyodide.ffi")


def _js() -> Any:
    return importlib.import_module("js")


def _jsnull() -> Any:
    return _ffi().jsnull


def is_js_null(value: Any) -> bool:
    """True for ``None`` and for JS ``null`` (JS ``undefined`` already arrives as ``None``)."""
    return value is None or _is_jsnull(value)


def _is_jsnull(value: Any) -> bool:
    return IN_PYODIDE and value is _jsnull()


def _with_jsnull(value: Any) -> Any:
    if value is None:
        return _jsnull()
    if isinstance(value, dict):
        return {key: _with_jsnull(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_with_jsnull(item) for item in value]
    return value


def _replace_jsnull(value: Any) -> Any:
    if _is_jsnull(value):
        return None
    if isinstance(value, dict):
        return {key: _replace_jsnull(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_jsnull(item) for item in value]
    return value
