"""Python client of the loopback replay server (harness/replay_server.mjs): DO SQL and D1 over HTTP."""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.platform.node_tooling import HARNESS_DIR, tool_env

from tsumugi.runtimes.cloudflare.js_conversion import sql_params

SERVER_READY_TIMEOUT_S = 30  # node + Miniflare are ready in about 1.2 s here (PLATFORM.md §3.2)


def encode_param(value: Any) -> Any:
    """A parameter as the harness expects it: BLOBs tagged and base64-encoded."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$blob": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def decode_cell(value: Any) -> Any:
    """A result cell from the harness: tagged BLOBs back to bytes, non-finite numbers back to floats."""
    if isinstance(value, dict) and "$blob" in value:
        return base64.b64decode(value["$blob"])
    if isinstance(value, dict) and "$num" in value:
        return float(value["$num"])
    return value


@dataclass(frozen=True)
class StatementGroup:
    """Statements replayed together; a transaction group runs inside ``transactionSync``."""

    stmts: Sequence[tuple[str, Sequence[Any]]]
    transaction: bool = False
    rollback: bool = False


class ReplayServer:
    """A running replay server; ``close()`` stops Miniflare through stdin and waits for it."""

    def __init__(self, node: str, d1_persist: Path | None = None) -> None:
        args = [node, str(HARNESS_DIR / "replay_server.mjs")]
        if d1_persist is not None:
            args.append(str(d1_persist))
        self._process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=tool_env(),
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            _, stderr = self._process.communicate(timeout=SERVER_READY_TIMEOUT_S)
            raise RuntimeError(f"replay server did not start: {stderr[-2000:]}")
        self.url: str = json.loads(line)["url"].rstrip("/")

    def _post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode("utf-8"),
            method="POST",
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def run_groups(self, database: str, groups: Sequence[StatementGroup]) -> list[list[dict[str, Any]]]:
        """Run statement groups on the Durable Object named ``database``; one result list per group."""
        body = {
            "groups": [
                {
                    "transaction": group.transaction,
                    "rollback": group.rollback,
                    "stmts": [
                        {"sql": sql, "params": [encode_param(p) for p in params]}
                        for sql, params in group.stmts
                    ],
                }
                for group in groups
            ]
        }
        reply = self._post("/do/" + urllib.parse.quote(database, safe=""), body)
        for group_results in reply["results"]:
            for result in group_results:
                if result.get("ok"):
                    result["rows"] = [tuple(decode_cell(cell) for cell in row) for row in result["rows"]]
        results: list[list[dict[str, Any]]] = reply["results"]
        return results

    def d1(self, stmts: Sequence[tuple[str, Sequence[Any]]]) -> list[dict[str, Any]]:
        """Run statements one by one on the harness's D1 binding (``all()``); results carry ``meta``."""
        body = {"stmts": [{"sql": sql, "params": [encode_param(p) for p in params]} for sql, params in stmts]}
        results: list[dict[str, Any]] = self._post("/d1", body)["results"]
        return results

    def d1_batch(self, stmts: Sequence[tuple[str, Sequence[Any]]]) -> dict[str, Any]:
        """Run statements as one D1 ``batch()`` (atomic); ``{ok, results|error}``."""
        body = {"stmts": [{"sql": sql, "params": [encode_param(p) for p in params]} for sql, params in stmts]}
        result: dict[str, Any] = self._post("/d1/batch", body)
        return result

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()


class LoopbackD1Error(Exception):
    """A D1 error reported by the harness (the message is D1's own, ``D1_ERROR: ...``)."""


class LoopbackD1Database:
    """``ports.SqlDatabase`` over the harness's real D1 binding, for engine code running in CPython.

    The same type rules as the Workers adapter apply to parameters (``js_conversion.sql_params``), so the
    statements reach D1 as they would from Python Workers. ``rows_read``/``rows_written`` sum D1's meta.
    """

    def __init__(self, server: ReplayServer) -> None:
        self._server = server
        self.rows_read = 0
        self.rows_written = 0

    def _meter(self, meta: dict[str, Any]) -> dict[str, Any]:
        self.rows_read += int(meta.get("rows_read") or 0)
        self.rows_written += int(meta.get("rows_written") or 0)
        return meta

    async def all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        (result,) = self._server.d1([(sql, sql_params(params))])
        if not result["ok"]:
            raise LoopbackD1Error(result["error"])
        self._meter(result["meta"])
        return [{key: decode_cell(value) for key, value in row.items()} for row in result["rows"]]

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        (result,) = self._server.d1([(sql, sql_params(params))])
        if not result["ok"]:
            raise LoopbackD1Error(result["error"])
        return int(self._meter(result["meta"]).get("changes") or 0)

    async def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        if not statements:
            return
        reply = self._server.d1_batch([(sql, sql_params(params)) for sql, params in statements])
        if not reply["ok"]:
            raise LoopbackD1Error(reply["error"])
        for result in reply["results"]:
            self._meter(result["meta"])
