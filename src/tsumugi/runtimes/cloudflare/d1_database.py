"""``ports.SqlDatabase`` over a D1 binding (``TSUMUGI_DB``): the read model on Cloudflare."""
# J-192

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tsumugi.ports import SqlValue
from tsumugi.runtimes.cloudflare.js_conversion import dict_rows, js_sql_args, to_js_value, to_py_value


class D1Database:
    """Prepared statements with positional bindings; ``rows_read``/``rows_written`` sum D1's ``meta``."""

    def __init__(self, db: Any) -> None:
        self._db = db
        self.rows_read = 0
        self.rows_written = 0

    def _statement(self, sql: str, params: Sequence[SqlValue]) -> Any:
        return self._db.prepare(sql).bind(*js_sql_args(params))

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        result = await self._statement(sql, params).all()
        self._meter(result)
        return dict_rows(result.results)

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        result = await self._statement(sql, params).run()
        meta = self._meter(result)
        return int(meta.get("changes") or 0)

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        # D1 runs a batch as one transaction: all statements apply or none do.
        if not statements:
            return
        prepared = [self._statement(sql, params) for sql, params in statements]
        for result in to_py_value(await self._db.batch(to_js_value(prepared))) or []:
            self._meter_meta(result.get("meta") if isinstance(result, dict) else None)

    def _meter(self, result: Any) -> dict[str, Any]:
        meta = to_py_value(result.meta)
        return self._meter_meta(meta)

    def _meter_meta(self, meta: Any) -> dict[str, Any]:
        if not isinstance(meta, dict):
            return {}
        self.rows_read += int(meta.get("rows_read") or 0)
        self.rows_written += int(meta.get("rows_written") or 0)
        return meta
