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

What comes in from JavaScript is ``JsonValue`` on the Python side; the ``py_*`` readers check the shape an
RPC argument must have (an object, a list of objects, an optional integer) once, where it arrives.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

from tsumugi.core.json_types import JsonObject, JsonValue
from tsumugi.errors import UnsafeIntegerError
from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.cloudflare.js_objects import JsValue, PyodideFfi

T = TypeVar("T")

# Number.MAX_SAFE_INTEGER: the largest int a JS number holds exactly; Pyodide converts larger ints to BigInt.
MAX_SAFE_INTEGER: Final = 2**53 - 1
IN_PYODIDE: Final = "_pyodide_core" in sys.modules


def sql_param(value: object) -> SqlValue:
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


def sql_params(params: Iterable[object]) -> list[SqlValue]:
    """All parameters of one statement, converted by :func:`sql_param`."""
    return [sql_param(value) for value in params]


def js_sql_args(params: Iterable[object]) -> list[JsValue]:
    """Positional arguments for ``sql.exec``/``stmt.bind``: bytes become ``Uint8Array``, None ``null``."""
    return [to_js_value(value) for value in sql_params(params)]


def to_js_value(value: object) -> JsValue:
    """A Python value as JavaScript: dicts become plain objects, lists arrays, bytes ``Uint8Array``."""
    if not IN_PYODIDE:
        return value
    # to_js turns None into undefined, which JSON.stringify and structured clone drop from objects;
    # wire shapes need an explicit null (`"result": null`), so None becomes jsnull first.
    return _ffi().to_js(_with_jsnull(value), dict_converter=_object_from_entries(), create_pyproxies=False)


def to_py_value(value: object) -> JsonValue:
    """A JavaScript value as plain Python data: objects become dicts, arrays lists, null/undefined None.

    A leaf JSON has no word for (an ArrayBuffer, a function) stays the proxy Pyodide made of it; only SQL
    rows can hold one, and ``rows_from_raw``/``dict_rows`` copy it out.
    """
    if value is None or _is_jsnull(value):
        return None
    # A JsProxy: to_py copies a JSON-shaped JS value into dicts and lists (its nulls stay jsnull).
    to_py: Callable[[], JsonValue] | None = getattr(value, "to_py", None)
    if to_py is None:
        return _unconverted(value)
    return _replace_jsnull(to_py())


def py_object(value: object) -> JsonObject:
    """An RPC argument that must be a JSON object."""
    data = to_py_value(value)
    if isinstance(data, dict):
        return data
    raise TypeError(f"expected a JSON object from JavaScript, got {type(data).__name__}")


def py_optional_object(value: object) -> JsonObject | None:
    """An optional RPC argument that, when given, must be a JSON object."""
    return None if is_js_null(value) else py_object(value)


def py_objects(value: object) -> list[JsonObject]:
    """An RPC argument that must be an array of JSON objects."""
    data = to_py_value(value)
    if isinstance(data, list):
        objects = [item for item in data if isinstance(item, dict)]
        if len(objects) == len(data):
            return objects
    raise TypeError("expected an array of JSON objects from JavaScript")


def py_strings(value: object) -> list[str]:
    """An RPC argument that must be an array of strings."""
    data = to_py_value(value)
    if isinstance(data, list):
        strings = [item for item in data if isinstance(item, str)]
        if len(strings) == len(data):
            return strings
    raise TypeError("expected an array of strings from JavaScript")


def py_optional_int(value: object) -> int | None:
    """An optional integer argument from JS, where every number is a double."""
    data = to_py_value(value)
    if data is None:
        return None
    if isinstance(data, int | float | str):
        return int(data)
    raise TypeError(f"expected a number from JavaScript, got {type(data).__name__}")


def rows_from_raw(raw_rows: JsValue) -> list[Row]:
    """The rows of ``cursor.raw().toArray()`` as tuples; ArrayBuffer blobs become ``bytes``."""
    table = to_py_value(raw_rows) or []
    if not isinstance(table, list):
        raise TypeError(f"expected an array of SQL rows, got {type(table).__name__}")
    rows: list[Row] = []
    for row in table:
        if not isinstance(row, list):
            raise TypeError(f"expected an SQL row array, got {type(row).__name__}")
        rows.append(tuple(_sql_result(cell) for cell in row))
    return rows


def dict_rows(js_rows: JsValue) -> list[dict[str, SqlValue]]:
    """The ``results`` of a D1 ``all()`` as dicts keyed by column name."""
    table = to_py_value(js_rows) or []
    if not isinstance(table, list):
        raise TypeError(f"expected an array of D1 rows, got {type(table).__name__}")
    rows: list[dict[str, SqlValue]] = []
    for row in table:
        if not isinstance(row, dict):
            raise TypeError(f"expected a D1 row object, got {type(row).__name__}")
        rows.append({key: _sql_result(cell) for key, cell in row.items()})
    return rows


def js_callback(fn: Callable[[], object]) -> JsValue:
    """A Python function JavaScript may call once (``transactionSync``), released after the call."""
    if not IN_PYODIDE:
        return fn
    return _ffi().create_once_callable(fn)


def js_function(fn: Callable[..., object]) -> JsValue:
    """A Python function JavaScript may call many times (an RPC callback); its arguments arrive as JS."""
    if not IN_PYODIDE:
        return fn
    return _ffi().create_proxy(fn)


def unwrap_sdk(obj: T) -> T:
    """The raw JS object behind a ``workers`` SDK wrapper (env, DO context, binding), or ``obj`` itself.

    The SDK converts arguments with its own rules (booleans stay booleans, large ints become BigInt); the
    adapter talks to the raw objects so that this module's rules apply instead (ADR-0082). A wrapper
    forwards the calls of the object it wraps, so the raw object answers to the same type.
    """
    for attribute in ("_ctx", "_env", "_binding"):
        inner = obj.__dict__.get(attribute) if hasattr(obj, "__dict__") else None
        if inner is not None:
            unwrapped: T = inner
            return unwrapped
    return obj


def _sql_result(cell: object) -> SqlValue:
    if isinstance(cell, memoryview | bytearray):
        return bytes(cell)
    if IN_PYODIDE:
        proxy = _ffi().JsProxy
        if isinstance(cell, proxy):
            # An ArrayBuffer (BLOB column) stays a JsProxy after to_py; copy it out.
            return bytes(cell.to_bytes())
    if cell is None or isinstance(cell, int | float | str | bytes):
        return cell
    raise TypeError(f"an SQL result cell cannot be a {type(cell).__name__}")


def _unconverted(value: object) -> JsonValue:
    """A value that reached Python without a proxy: Pyodide passes numbers, strings and booleans as they
    are, and outside Pyodide every value is already the fake binding's own Python data."""
    if isinstance(value, str | int | float | list | dict):
        return value
    raise TypeError(f"a {type(value).__name__} is not a value JavaScript hands Python as JSON")


def to_py_binding(value: object) -> object:
    """A binding ``WorkerEnv`` does not wrap (a var, a KV namespace): JS data as Python, others as is."""
    if value is None or _is_jsnull(value):
        return None
    to_py: Callable[[], JsonValue] | None = getattr(value, "to_py", None)
    return value if to_py is None else _replace_jsnull(to_py())


def _ffi() -> PyodideFfi:
    # ADR-0082: resolved at run time, so type checking never depends on which pyodide stubs are installed.
    ffi: PyodideFfi = importlib.import_module("pyodide.ffi")
    return ffi


def _object_from_entries() -> JsValue:
    js_object: JsValue = importlib.import_module("js").Object.fromEntries
    return js_object


def _jsnull() -> object:
    return _ffi().jsnull


def is_js_null(value: object) -> bool:
    """True for ``None`` and for JS ``null`` (JS ``undefined`` already arrives as ``None``)."""
    return value is None or _is_jsnull(value)


def _is_jsnull(value: object) -> bool:
    return IN_PYODIDE and value is _jsnull()


def _with_jsnull(value: object) -> object:
    if value is None:
        return _jsnull()
    if isinstance(value, dict):
        return {key: _with_jsnull(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_with_jsnull(item) for item in value]
    return value


def _replace_jsnull(value: JsonValue) -> JsonValue:
    if _is_jsnull(value):
        return None
    if isinstance(value, dict):
        return {key: _replace_jsnull(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_jsnull(item) for item in value]
    return value
