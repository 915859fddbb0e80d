"""The read model's writes in a process of their own: the local stand-in for D1 being another service.

On Cloudflare a coordinator's projection is a call to D1, which does the work elsewhere while the
Durable Object serves other events. Locally the read model is a SQLite file, and its upserts (a wide
row and every index of it) were a tenth of the engine's own work per job, done on the event loop's
thread; a thread does not help under the GIL (ADR-0170). ``WriterProcess`` sends each ``batch`` and
``run`` down a pipe to a child process (``read_model_child``) that runs it on the same file, and awaits
the answer; answers come back in the order the writes were sent. Reads stay on this process's
connection, which sees every write whose answer has come back (WAL). While a coordinator awaits a
write, other calls reach it, as a Durable Object's input gate lets them in while it awaits another
service (``serial_coordinators.outside_turn``).

The child starts with the runtime (``start``) and ends when the pipe closes. One that dies fails the
writes it had not answered (a failed projection is retried by the next tick) and is started again by
the next write. Where no child can be started, the writes run here, as before. The runtime's checkpoint
thread copies the child's log back, as for every other file (ADR-0162).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sqlite3
import subprocess
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import tsumugi
from tsumugi.errors import LocalRuntimeError
from tsumugi.ports import SqlValue
from tsumugi.runtimes.local import read_model_child
from tsumugi.runtimes.local.serial_coordinators import outside_turn
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.runtimes.local.wal_checkpoints import CHECKPOINTS, SAFETY_NET_PAGES
from tsumugi.storage.projection_outbox import ProjectedJobs

log = logging.getLogger("tsumugi.local")
metrics_log = logging.getLogger("tsumugi")  # as the shard's own metrics writer logs

CHILD_SCRIPT: Final = str(Path(read_model_child.__file__).resolve())
PACKAGE: Final = str(Path(tsumugi.__file__).resolve().parent.parent)  # a projection imports it there
HEAD: Final = read_model_child.HEAD
CLOSE_WAIT_S: Final = 10.0  # a child still writing a batch when the runtime stops is given this long


class WriterExitedError(LocalRuntimeError):
    """The read model's writer process ended before it answered a write."""


class _Answers(asyncio.Protocol):
    """Reads the child's answers and settles the waiting writes, oldest first."""

    def __init__(self, waiting: deque[asyncio.Future[object]]) -> None:
        self._waiting = waiting
        self._buffer = bytearray()
        self.closed = False

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= HEAD:
            size = int.from_bytes(buffer[:HEAD], "big")
            if len(buffer) < HEAD + size:
                return
            error, value = pickle.loads(buffer[HEAD : HEAD + size])
            del buffer[: HEAD + size]
            future = self._waiting.popleft()
            if future.done():
                continue  # its caller was cancelled; the write was made all the same
            if error is None:
                future.set_result(value)
            else:
                future.set_exception(_sqlite_error(*error))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_exception(WriterExitedError("the read model's writer process exited"))


def _sqlite_error(name: str, message: str, code: int | None) -> sqlite3.Error:
    """The child's error as the sqlite3 class it raised there, with its SQLite error code."""
    kind = getattr(sqlite3, name, None)
    if not (isinstance(kind, type) and issubclass(kind, sqlite3.Error)):
        kind = sqlite3.Error
    error = kind(message)
    if code is not None:
        error.sqlite_errorcode = code
    return error


class WriterProcess:
    """``SqlDatabase`` that reads through ``reads`` and writes in a child process on the same file.

    The requests go down a pipe this object owns (written without blocking, the rest when the pipe has
    room), so ``close`` can end the child at once; the answers come up through an asyncio read pipe.
    """

    def __init__(self, reads: SqliteDatabase) -> None:
        self._reads = reads
        self._process: subprocess.Popen[bytes] | None = None
        self._requests = -1  # the pipe's write end, -1 when no child runs
        self._unsent = bytearray()  # what the pipe had no room for yet
        self._answers: _Answers | None = None
        self._answer_pipe: asyncio.ReadTransport | None = None
        self._waiting: deque[asyncio.Future[object]] = deque()
        self._inline = False  # no child could be started: write here
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that watches the pipes
        self._closing = False

    @property
    def pid(self) -> int | None:
        """The child's process id while one runs."""
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        """Start the child now rather than at the first write, which would wait for it."""
        if self._answers is None and not self._inline:
            await self._start()

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        return await self._reads.all(sql, params)

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        if not await self._ready():
            return await self._reads.run(sql, params)
        changed = await self._ask("run", [(sql, params)])
        assert isinstance(changed, int)  # the child's rowcount
        return changed

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        if not statements:
            return
        if await self._ready():
            await self._ask("batch", list(statements))  # the child binds each as a tuple
        else:
            await self._reads.batch(statements)

    async def project_shard(
        self, shard_file: str, limit: int, changed_before_ms: int
    ) -> asyncio.Future[object] | None:
        """Ask the child to read the shard's due jobs from ``shard_file`` and upsert them (ADR-0171); the
        future settles with its ``ProjectedJobs``. None when no child can be started."""
        if not await self._ready():
            return None
        return self._send("project", (shard_file, limit, changed_before_ms))

    async def project_run(self, run_file: str, run_id: str, last_seq: int) -> bool:
        """Have the child read the run's outbox rows up to ``last_seq`` from ``run_file`` and upsert them
        (ADR-0179), and await it; False when no child can be started."""
        if not await self._ready():
            return False
        await self._ask("project_run", (run_file, run_id, last_seq))
        return True

    def write_points(self, shard_file: str) -> asyncio.Future[object] | None:
        """Ask the child to write the metric points of the shard's last projection; its answer is how
        many. None when no child runs: they were lost with the one that held them (at most once)."""
        # J-194, M-4
        if self._answers is None or self._answers.closed:
            return None
        return self._send("points", shard_file)

    async def _ready(self) -> bool:
        """Whether a child runs to write, starting one if the last ended; False: write here instead."""
        if self._closing:
            raise WriterExitedError("the read model's writer process was closed")
        if self._inline:
            return False
        if self._answers is None or self._answers.closed:
            return await self._start()
        return True

    async def _ask(self, kind: str, body: object) -> object:
        """The running child's answer to one request."""
        return await outside_turn(self._send(kind, body))

    def _send(self, kind: str, body: object) -> asyncio.Future[object]:
        """Send one request to the running child; the future settles with its answer."""
        frame = pickle.dumps((kind, body), pickle.HIGHEST_PROTOCOL)
        answer: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._waiting.append(answer)
        try:
            self._write(len(frame).to_bytes(HEAD, "big") + frame)
        except OSError as error:  # the child is gone; its answers' pipe ends and fails the rest
            self._waiting.remove(answer)
            if self._answers is not None:
                self._answers.closed = True  # the next request starts another, even before that pipe ends
            raise WriterExitedError(f"the read model's writer process exited: {error}") from error
        answer.add_done_callback(self._wrote)
        return answer

    def _wrote(self, _answer: asyncio.Future[object]) -> None:
        CHECKPOINTS.mark(self._reads.path)  # the runtime's checkpoint thread copies the child's log back

    def _write(self, data: bytes) -> None:
        if self._unsent:
            self._unsent += data
            return
        try:
            sent = os.write(self._requests, data)
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            self._unsent += data[sent:]
            assert self._loop is not None  # set with the pipe
            self._loop.add_writer(self._requests, self._flush)

    def _flush(self) -> None:
        try:
            sent = os.write(self._requests, self._unsent)
        except BlockingIOError:
            return
        except OSError:
            sent = len(self._unsent)  # the child is gone: its answers' pipe fails what waits
        del self._unsent[:sent]
        if not self._unsent and self._loop is not None:
            self._loop.remove_writer(self._requests)

    async def _start(self) -> bool:
        """A child on the read model's file, after the one that ended, if any; False: none can start."""
        self._stop()
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    CHILD_SCRIPT,
                    self._reads.path,
                    str(SAFETY_NET_PAGES),
                    PACKAGE,
                ],
                stdin=read_end,
                stdout=subprocess.PIPE,
            )
        except OSError as error:
            os.close(write_end)
            log.warning("tsumugi: the read model is written in this process: no writer process (%s)", error)
            self._inline = True
            return False
        finally:
            os.close(read_end)
        assert process.stdout is not None  # a pipe
        os.set_blocking(write_end, False)
        self._process, self._requests = process, write_end
        answers = self._answers = _Answers(self._waiting)
        self._loop = asyncio.get_running_loop()
        self._answer_pipe, _ = await self._loop.connect_read_pipe(lambda: answers, process.stdout)
        return True

    def _stop(self) -> None:
        process, self._process = self._process, None
        if self._requests >= 0:
            if self._unsent:  # writes whose callers were cancelled: the child still makes them
                if self._loop is not None:
                    self._loop.remove_writer(self._requests)
                os.set_blocking(self._requests, True)
                with contextlib.suppress(OSError):
                    os.write(self._requests, self._unsent)
                self._unsent.clear()
            os.close(self._requests)  # the child answers what it has read, then ends
            self._requests = -1
        if process is not None:
            try:
                process.wait(timeout=CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self._read_last_answers(process)
        if self._answer_pipe is not None:
            self._answer_pipe.close()
            self._answer_pipe = None

    @property
    def closing(self) -> bool:
        """Whether ``close`` was called: what the child had not answered by then is dropped, not failed."""
        return self._closing

    def _read_last_answers(self, process: subprocess.Popen[bytes]) -> None:
        """Settle the requests the child answered before it ended: the loop, stopped here, has not read
        them (a projection's metric points, sent without waiting)."""
        if self._answers is None or process.stdout is None or not self._waiting:
            return
        with contextlib.suppress(OSError):  # the pipe the loop reads without blocking: at its end now
            while chunk := os.read(process.stdout.fileno(), 65_536):
                self._answers.data_received(chunk)

    def close(self) -> None:
        """End the child once it has made every write sent to it; the reads close with their database."""
        self._closing = True
        self._stop()


class ShardFileProjection:
    """``ShardProjection`` of one shard by the writer process, which reads the shard's file (ADR-0171).

    The shard's coordinator then only clears what was projected: the reads, the snapshots and the
    upserts run beside it, on another core.
    """

    # J-192, J-194

    def __init__(self, writer: WriterProcess, shard_file: str) -> None:
        self._writer = writer
        self._file = shard_file

    async def start(self, limit: int, changed_before_ms: int) -> asyncio.Future[ProjectedJobs] | None:
        answer = await self._writer.project_shard(self._file, limit, changed_before_ms)
        if answer is None:
            return None
        projected: asyncio.Future[ProjectedJobs] = asyncio.get_running_loop().create_future()

        def settle(done: asyncio.Future[object]) -> None:
            error = None if done.cancelled() else done.exception()  # retrieved, whatever follows
            if done.cancelled() or self._writer.closing:  # the runtime stops: nothing will collect it
                projected.cancel()
            elif error is not None:
                projected.set_exception(error)
            elif isinstance(value := done.result(), ProjectedJobs):
                projected.set_result(value)
            else:
                projected.set_exception(TypeError(f"the writer process answered a projection with {value!r}"))

        answer.add_done_callback(settle)
        return projected

    def write_points(self) -> None:
        try:
            written = self._writer.write_points(self._file)
        except WriterExitedError:  # M-4: logged and swallowed, never stops the tick
            metrics_log.exception("tsumugi: writeMetrics failed")
            return
        if written is not None:
            written.add_done_callback(_log_points_failure)


class RunFileProjection:
    """``RunProjectionBeside`` of one run by the writer process, which reads the run's file (ADR-0179)."""

    # F-35 step 7, F-84

    def __init__(self, writer: WriterProcess, run_file: str, run_id: str) -> None:
        self._writer = writer
        self._file = run_file
        self._run_id = run_id

    async def project(self, last_seq: int) -> bool:
        return await self._writer.project_run(self._file, self._run_id, last_seq)


def _log_points_failure(written: asyncio.Future[object]) -> None:
    error = None if written.cancelled() else written.exception()
    if error is not None:  # M-4: logged and swallowed
        metrics_log.error("tsumugi: writeMetrics failed", exc_info=error)
