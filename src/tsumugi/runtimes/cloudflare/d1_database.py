"""``ports.SqlDatabase`` over a D1 binding (``TSUMUGI_DB``): the read model on Cloudflare."""
# J-192

from __future__ import annotations

from collections.abc import Sequence

from tsumugi.core.json_types import JsonObject, JsonValue
from tsumugi.ports import SqlValue
from tsumugi.runtimes.cloudflare.js_conversion import dict_rows, js_sql_args, to_js_value, to_py_value
from tsumugi.runtimes.cloudflare.js_objects import D1Binding, D1PreparedStatement, D1Result


class D1Database:
    """Prepared statements with positional bindings; ``rows_read``/``rows_written`` sum D1's ``meta``."""

    def __init__(self, db: D1Binding) -> None:
        self._db = db
        self.rows_read = 0
        self.rows_written = 0

    def _statement(self, sql: str, params: Sequence[SqlValue]) -> D1PreparedStatement:
        return self._db.prepare(sql).bind(*js_sql_args(params))

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        result = await self._statement(sql, params).all()
        self._meter(result)
        return dict_rows(result.results)

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        result = await self._statement(sql, params).run()
        meta = self._meter(result)
        return _count(meta.get("changes"))

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        # D1 runs a batch as one transaction: all statements apply or none do.
        if not statements:
            return
        prepared = [self._statement(sql, params) for sql, params in statements]
        results = to_py_value(await self._db.batch(to_js_value(prepared))) or []
        for result in results if isinstance(results, list) else ():
            self._meter_meta(result.get("meta") if isinstance(result, dict) else None)

    def _meter(self, result: D1Result) -> JsonObject:
        meta = to_py_value(result.meta)
        return self._meter_meta(meta)

    def _meter_meta(self, meta: JsonValue) -> JsonObject:
        if not isinstance(meta, dict):
            return {}
        self.rows_read += _count(meta.get("rows_read"))
        self.rows_written += _count(meta.get("rows_written"))
        return meta


def _count(value: JsonValue) -> int:
    """A counter of D1's ``meta`` (a JS number), 0 when it is absent."""
    return int(value or 0) if isinstance(value, int | float | None) else 0
