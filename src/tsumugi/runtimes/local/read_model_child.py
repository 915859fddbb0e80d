"""The read model's writer process (``read_model_process``): runs the writes it reads on stdin.

Run as a script with only the standard library: ``read_model_child.py <database file> <pages of log
past which a commit checkpoints> <directory holding the tsumugi package>``. A request is a frame, a
4-byte big-endian length and a pickle of ``(kind, body)``:

- ``"batch"``, statements: runs them in one transaction, runs of the same statement through one
  ``executemany``;
- ``"run"``, one statement: runs it and answers the rows changed;
- ``"project"``, ``(shard file, limit, cutoff)``: reads the shard's due jobs from its file, as its
  coordinator would (``ProjectionOutbox.collect``), upserts them and answers the ``ProjectedJobs`` the
  coordinator clears (ADR-0171); their metric points wait for
- ``"points"``, shard file: writes the points of that shard's last projection, answers how many;
- ``"project_run"``, ``(run file, run id, last seq)``: reads the run's outbox rows up to that ``seq``
  from its file, as its coordinator would (``run_outbox.pending_through``), and upserts their nodes,
  then the run, in one transaction (ADR-0179); answers how many rows it read.

The answer, a frame too, is ``(None, value)`` or ``((sqlite3 error class, message, error code),
None)``. The process ends when stdin closes, after answering every request it read. Only a projection
imports the package (about 60 ms, once): plain writes start as fast as the interpreter.
"""

from __future__ import annotations

import itertools
import operator
import pickle
import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, BinaryIO, Final, TypeAlias, TypeVar, cast

if TYPE_CHECKING:  # the process itself imports the package only to project (``Writer._project``)
    from tsumugi.ports import Row, SqlValue

HEAD: Final = 4  # bytes of a frame's length
PAGE_CACHE_KIB: Final = 65_536  # 64 MiB, here and on the runtime's connection: hot indexes at 1M rows
BUSY_TIMEOUT_MS: Final = 5_000  # as ``sqlite_files``' (no package imports here): the cron sweep's write
OPEN_FILES: Final = 64  # shard and run files kept open between projections; the least recently used closes
T = TypeVar("T")
Statements: TypeAlias = "list[tuple[str, Sequence[SqlValue]]]"

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


class _FileReads:
    """A shard's or a run's file as its outbox reads it here: ``execute`` only (``SqlExecutor``'s writes
    refuse), each projection's reads in one read transaction, so that they see one state of the file."""

    def __init__(self, path: str) -> None:
        # mode=rw: a file that is gone is an error, never a new empty file
        uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=rw"
        self.conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self.conn.execute("PRAGMA query_only=1")

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        rows: list[Row] = self.conn.execute(sql, tuple(params)).fetchall()
        return rows

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        raise sqlite3.OperationalError("the writer process only reads a coordinator's file")

    def transaction(self, fn: Callable[[], T]) -> T:
        self.conn.execute("BEGIN")
        try:
            return fn()
        finally:
            self.conn.execute("COMMIT")


class Writer:
    """The requests' work on the read model's connection, and the coordinators' files projections read."""

    def __init__(self, conn: sqlite3.Connection, package_dir: str) -> None:
        self.conn = conn
        self._package_dir = package_dir
        self._files: dict[str, _FileReads] = {}  # oldest use first
        self._points: dict[str, Statements] = {}  # by shard, until "points"
        self._metrics_ddl: Sequence[str] = ()
        self._metrics_table = False

    def apply(self, kind: str, body: object) -> object:
        """One request's work and its answer; ``body`` is what ``read_model_process`` sends for ``kind``."""
        if kind == "run":
            [(sql, params)] = cast("Statements", body)
            return self.conn.execute(sql, tuple(params)).rowcount
        if kind == "project":
            shard_file, limit, changed_before_ms = cast("tuple[str, int, int]", body)
            return self._project(shard_file, limit, changed_before_ms)
        if kind == "points":
            return self._write_points(cast("str", body))
        if kind == "project_run":
            run_file, run_id, last_seq = cast("tuple[str, str, int]", body)
            return self._project_run(run_file, run_id, last_seq)
        run_batch(self.conn, cast("Statements", body))
        return 0

    def _project(self, shard_file: str, limit: int, changed_before_ms: int) -> object:
        self._import_package()
        from tsumugi.storage import read_model_writer as rm  # only a projection needs them
        from tsumugi.storage.projection_outbox import ProjectionOutbox

        reads = self._reads(shard_file)
        outbox = ProjectionOutbox(reads)
        batch = reads.transaction(lambda: outbox.collect(limit, changed_before_ms))
        present = batch.present()
        if present:
            run_batch(self.conn, [(rm.UPSERT_JOB_SQL, rm.job_row(snap)) for snap in present])
        self._points[shard_file] = rm.point_statements(present)
        self._metrics_ddl = rm.METRICS_DDL
        return batch.projected()

    def _project_run(self, run_file: str, run_id: str, last_seq: int) -> int:
        self._import_package()
        from tsumugi.storage import read_model_writer as rm
        from tsumugi.storage.run_outbox import pending_through

        reads = self._reads(run_file)
        batch = reads.transaction(lambda: pending_through(reads, run_id, last_seq))
        # Nodes first, as the coordinator writes them: in one transaction here, so a reader sees both.
        statements = rm.run_node_statements(batch.nodes) + rm.run_statements(batch.runs)
        if statements:
            run_batch(self.conn, statements)
        return batch.rows

    def _import_package(self) -> None:
        if self._package_dir not in sys.path:
            sys.path.insert(0, self._package_dir)

    def _reads(self, path: str) -> _FileReads:
        """The read-only connection to a coordinator's file, the most recently used of those kept open."""
        reads = self._files.pop(path, None) or _FileReads(path)
        self._files[path] = reads
        if len(self._files) > OPEN_FILES:
            oldest = next(iter(self._files))
            self._files.pop(oldest).conn.close()
        return reads

    def _write_points(self, shard_file: str) -> int:
        points = self._points.pop(shard_file, [])
        if not points:
            return 0
        made = self._metrics_ddl if not self._metrics_table else ()  # on demand (ADR-0064), once
        run_batch(self.conn, [*((sql, ()) for sql in made), *points])
        self._metrics_table = True
        return len(points) - 1  # the prune is the last statement

    def close(self) -> None:
        for reads in self._files.values():
            reads.conn.close()  # after the runtime's: the last close of a file removes its log
        self.conn.close()


def serve(path: str, safety_net_pages: int, package_dir: str, requests: BinaryIO, answers: BinaryIO) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    # The runtime's checkpoint thread copies the log back about once a second (ADR-0162); a checkpoint
    # inside a commit is the safety net only, as on the runtime's own connections.
    conn.execute(f"PRAGMA wal_autocheckpoint={safety_net_pages}")
    writer = Writer(conn, package_dir)
    try:
        while (frame := _frame(requests)) is not None:
            kind, body = pickle.loads(frame)
            answer: tuple[object, object]
            try:
                answer = (None, writer.apply(kind, body))
            except sqlite3.Error as error:
                answer = ((type(error).__name__, str(error), getattr(error, "sqlite_errorcode", None)), None)
            out = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
            answers.write(len(out).to_bytes(HEAD, "big") + out)
            answers.flush()
    finally:
        writer.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.stdin.buffer, sys.stdout.buffer)
