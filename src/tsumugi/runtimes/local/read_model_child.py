"""The read model's writer process (``read_model_process``): runs the writes it reads on stdin.

Run as a script with only the standard library: ``read_model_child.py <database file> <pages of log
past which a commit checkpoints>``. A request is a frame, a 4-byte big-endian length and a
pickle of ``(kind, statements)``: ``"batch"`` runs every statement in one transaction, runs of the same
statement through one ``executemany``; ``"run"`` runs its one statement and answers the rows changed.
The answer, a frame too, is ``(None, rowcount)`` or ``((sqlite3 error class, message, error code),
None)``. The process ends when stdin closes, after answering every request it read.
"""

from __future__ import annotations

import itertools
import operator
import pickle
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from typing import BinaryIO, Final

HEAD: Final = 4  # bytes of a frame's length
PAGE_CACHE_KIB: Final = 65_536  # 64 MiB, here and on the runtime's connection: hot indexes at 1M rows
BUSY_TIMEOUT_MS: Final = 5_000  # as ``sqlite_files``' (no package imports here): the cron sweep's write

_NO_VALUES: Final[dict[None, None]] = {}
sqlite3.register_adapter(type(None), _NO_VALUES.get)  # None binds as NULL without an adapter miss (ADR-0166)


def _frame(stream: BinaryIO) -> bytes | None:
    head = stream.read(HEAD)
    if len(head) < HEAD:
        return None
    size = int.from_bytes(head, "big")
    body = stream.read(size)
    return body if len(body) == size else None


def run_batch(conn: sqlite3.Connection, statements: Iterable[tuple[str, Iterable[object]]]) -> None:
    """Run ``statements`` in one transaction, like D1's ``batch``; this and ``sql_database`` share it.

    Runs of the same statement go to ``executemany``: one C loop instead of a call per row.
    """
    conn.execute("BEGIN")
    try:
        for sql, group in itertools.groupby(statements, key=operator.itemgetter(0)):
            conn.executemany(sql, [tuple(params) for _, params in group])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a full disk has already rolled it back
            conn.execute("ROLLBACK")
        raise


def _apply(conn: sqlite3.Connection, kind: str, statements: list[tuple[str, Sequence[object]]]) -> int:
    if kind == "run":
        [(sql, params)] = statements
        return conn.execute(sql, tuple(params)).rowcount
    run_batch(conn, statements)
    return 0


def serve(path: str, safety_net_pages: int, requests: BinaryIO, answers: BinaryIO) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    # The runtime's checkpoint thread copies the log back about once a second (ADR-0162); a checkpoint
    # inside a commit is the safety net only, as on the runtime's own connections.
    conn.execute(f"PRAGMA wal_autocheckpoint={safety_net_pages}")
    try:
        while (body := _frame(requests)) is not None:
            kind, statements = pickle.loads(body)
            answer: tuple[object, object]
            try:
                answer = (None, _apply(conn, kind, statements))
            except sqlite3.Error as error:
                answer = ((type(error).__name__, str(error), getattr(error, "sqlite_errorcode", None)), None)
            frame = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
            answers.write(len(frame).to_bytes(HEAD, "big") + frame)
            answers.flush()
    finally:
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.stdin.buffer, sys.stdout.buffer)
