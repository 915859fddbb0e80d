#!/usr/bin/env python3
"""The Worker in the real workerd: cold start, job latency, ``enqueue_many`` time and DO rows per job.

Starts ``scripts/workerd-dev`` (``tests/workerd/harness.Workers``, on free ports) on a fresh state
directory, stops it, and starts it again on the same directory; the rest runs on the restarted pair,
through the Workers' HTTP ports only:

1. each start: process start -> wrangler's "Ready on" line -> the first ``GET /api/flows`` (bearer auth
   and the D1 migration check) answered 200, and that first request's own latency;
2. one Greet job at a time on the idle Worker (``POST /api/jobs``): enqueue -> COMPLETED as the shard
   stamped it (the job's ``updated_at``) and as ``GET /api/jobs/{id}`` first showed it from D1;
3. 1,000 Tally jobs (two shards, a partition key each) in one companion ``POST /enqueue-many``;
4. COST.md workload A (1,000 no-op Report jobs in one ``enqueue_many``, until the sweep removed them):
   rows per job from the shard's real cursors (companion ``GET /meter``), next to the SQL replay of
   ``bench/cloudflare_cost.py``.

Usage: ``.venv/bin/python bench/workerd_bench.py [--latency-jobs 50] [--many 1000] [--jobs 1000]
[--no-sweep] [--keep]``. Figures vary with the machine's load; nothing here asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from the repository

from tests.platform.cost_report import measure
from tests.platform.cost_workloads import WorkloadFigures
from tests.platform.replay_client import ReplayServer
from tests.workerd.harness import (
    READY_TIMEOUT_S,
    SETTLE_TIMEOUT_S,
    TERMINAL,
    Answer,
    Workers,
    quoted,
    request,
    why_workerd_cannot_run,
)

from tsumugi.coordinator.shard_tick import FIRST_PROJECTION_DELAY_MS
from tsumugi.core.config import DEFAULT_SWEEP_AFTER_MS

LATENCY_BINDING: Final = "Greet"  # one shard; only the example's flows enqueue it otherwise
MANY_BINDING: Final = "Tally"  # two shards: every job names a partition key
COST_BINDING: Final = "Report"  # a no-op performer (it logs a line); one shard, its own Durable Object
COST_SHARD: Final = f"{COST_BINDING}#0"
LOG_POLL_S: Final = 0.05  # how often the log is read during a start: the resolution of the start times
JOB_POLL_S: Final = 0.05  # D1 reads while one job runs: 20 small GETs a second beside a ~1 s job
MANY_POLL_S: Final = 0.2  # D1 (and meter) reads while 1,000 jobs run
MANY_TIMEOUT_S: Final = 300.0
PAGE: Final = 100  # GET /api/jobs returns at most 100 rows
# While the sweep is awaited the meter is read this often: workerd evicts a Durable Object after about
# 10 s without a request, and a new instance's counters start again from zero.
METER_POLL_S: Final = 1.0
SWEEP_QUIET_S: Final = 3.0  # the sweep is over once every job is due and the meter stayed still this long
SWEEP_TIMEOUT_S: Final = 120.0  # after the newest job fell due for the sweep
RELOAD_LINE: Final = "Reloading local server"  # wrangler dev saw a file under src/ change
UNNAMED: Final = "UnnamedObjectError"  # rpc_stubs.UNNAMED_MARKER (that package imports only in workerd)


def pause(seconds: float) -> None:
    time.sleep(seconds)  # real time: the Workers run in another process; every caller bounds its loop


def ok(answer: Answer, status: int, what: str) -> Any:
    if answer.status != status:
        raise RuntimeError(f"{what} answered {answer.status}: {answer.text[:500]}")
    return answer.body


# ---------------------------------------------------------------------------------------------- 1. starts


@dataclass(frozen=True)
class StartTimes:
    prepared_s: float  # "workerd-dev: example on": setup, vendoring, Pyodide bundle, D1 migrations done
    ready_s: float  # the example's "Ready on" line
    first_ms: float  # the first GET /api/flows, sent as soon as that line showed
    first_status: int
    first_200_s: float  # process start -> the first 200 answer
    second_ms: float  # the same request again
    companion_first_ms: float  # the companion's first answer (GET /, a 404 from its Python fetch)


class TimedWorkers(Workers):
    """``Workers`` that times its start (log lines, the first answers) and counts wrangler's reloads."""

    times: StartTimes

    def reloads(self) -> int:
        return self.log_path.read_text(errors="replace").count(RELOAD_LINE)

    def failed_runs(self) -> tuple[int, int]:
        """Python errors in the log: failed alarm runs, and RPCs refused as ``UnnamedObjectError``."""
        text = self.log_path.read_text(errors="replace")
        failures = [chunk.split("Uncaught", 1)[0] for chunk in text.split("Uncaught PythonError")[1:]]
        alarms = sum(", in alarm" in failure for failure in failures)
        return alarms, sum(UNNAMED in failure and ", in alarm" not in failure for failure in failures)

    def _wait_for_line(self, line: str) -> float:
        deadline = self.started_at + READY_TIMEOUT_S
        while line not in self.log_path.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log_path.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"scripts/workerd-dev never printed {line!r}:\n{tail}")
            pause(LOG_POLL_S)
        return time.monotonic() - self.started_at

    def _wait_ready(self) -> float:
        try:
            self.times = self._time_start()
        except BaseException:
            self.close()  # Workers.__init__ would leave this start running
            raise
        return self.times.first_200_s

    def _time_start(self) -> StartTimes:
        prepared_s = self._wait_for_line("workerd-dev: example on")
        ready_s = self._wait_for_line(f"Ready on {self.url}")
        first, first_ms = timed(self.url + "/api/flows")
        answer = first
        while answer.status != 200 and time.monotonic() < self.started_at + READY_TIMEOUT_S:
            pause(LOG_POLL_S)
            answer, _ = timed(self.url + "/api/flows")
        first_200_s = time.monotonic() - self.started_at
        _, second_ms = timed(self.url + "/api/flows")
        self._wait_for_line(f"Ready on {self.companion_url}")
        _, companion_ms = timed(self.companion_url + "/")
        return StartTimes(prepared_s, ready_s, first_ms, first.status, first_200_s, second_ms, companion_ms)


def timed(url: str) -> tuple[Answer, float]:
    begun = time.monotonic()
    answer = request(url, timeout_s=120)
    return answer, (time.monotonic() - begun) * 1000


# ----------------------------------------------------------------------------------- 2. one job at a time


@dataclass(frozen=True)
class JobTiming:  # milliseconds from the moment POST /api/jobs was sent
    enqueue_ms: float  # the POST answered 201
    dispatched_ms: float  # the shard's dispatched_at
    shard_ms: float  # the shard's COMPLETED stamp (updated_at)
    d1_ms: float  # the first GET /api/jobs/{id} that showed COMPLETED


def time_one_job(workers: Workers) -> JobTiming:
    sent_ms = time.time() * 1000  # the shard stamps with the same host clock
    begun = time.monotonic()
    job_id = workers.enqueue(LATENCY_BINDING, {"name": "latency"})
    enqueued = time.monotonic()
    while (job := workers.job(job_id)) is None or job["state"] not in TERMINAL:
        if time.monotonic() > begun + SETTLE_TIMEOUT_S:
            raise RuntimeError(f"job {job_id} did not settle in {SETTLE_TIMEOUT_S} s: {job}")
        pause(JOB_POLL_S)
    seen = time.monotonic()
    if job["state"] != "COMPLETED":
        raise RuntimeError(f"job {job_id} ended {job['state']}: {job}")
    enqueue_ms, d1_ms = (enqueued - begun) * 1000, (seen - begun) * 1000
    return JobTiming(enqueue_ms, job["dispatched_at"] - sent_ms, job["updated_at"] - sent_ms, d1_ms)


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[94]


# ------------------------------------------------------------------------------------ 3. enqueue_many


@dataclass(frozen=True)
class ManyTiming:  # seconds from the moment POST /enqueue-many was sent
    jobs: int
    call_s: float  # the companion answered with every id
    shard_s: float  # the newest COMPLETED stamp among the jobs
    d1_s: float  # D1 counted them all COMPLETED
    last_completed_ms: int  # that newest stamp, epoch ms


def completed_jobs(workers: Workers, binding: str, limit: int = 1, offset: int = 0) -> tuple[int, list[Any]]:
    """The number of ``binding`` jobs D1 shows COMPLETED, and a page of them, newest first."""
    query = f"binding={binding}&state=COMPLETED&sort=updated_at&order=desc&limit={limit}&offset={offset}"
    body = ok(workers.api("GET", f"/api/jobs?{query}"), 200, "GET /api/jobs")
    return int(body["total"]), list(body["jobs"])


def run_many(workers: Workers, jobs: list[dict[str, Any]], on_poll: Callable[[], object]) -> ManyTiming:
    """One ``enqueue_many`` through the companion, then D1 polled until every job is COMPLETED."""
    binding = str(jobs[0]["binding"])
    before, _ = completed_jobs(workers, binding)
    sent_ms = time.time() * 1000
    begun = time.monotonic()
    answer = request(workers.companion_url + "/enqueue-many", "POST", {"jobs": jobs}, timeout_s=120)
    called = time.monotonic()
    if len(ok(answer, 201, "POST /enqueue-many")["ids"]) != len(jobs):
        raise RuntimeError(f"POST /enqueue-many answered {len(answer.body['ids'])} ids for {len(jobs)} jobs")
    while True:
        on_poll()
        done, newest = completed_jobs(workers, binding)
        if done >= before + len(jobs):
            break
        if time.monotonic() > begun + MANY_TIMEOUT_S:
            stats = workers.api("GET", "/api/stats").body
            raise RuntimeError(f"{done - before} of {len(jobs)} {binding} jobs COMPLETED; stats {stats}")
        pause(MANY_POLL_S)
    last_ms = int(newest[0]["updated_at"])
    return ManyTiming(
        len(jobs), called - begun, (last_ms - sent_ms) / 1000, time.monotonic() - begun, last_ms
    )


# ------------------------------------------------------------------------- 4. rows per job, metered


Row = tuple[float, float, float, float]  # per job: rows written, setAlarm calls, both, rows read


@dataclass(frozen=True)
class Counts:
    rows_read: int = 0
    rows_written: int = 0
    alarm_sets: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(self.fields(), other.fields(), strict=True)))

    def __sub__(self, other: Counts) -> Counts:
        return Counts(*(a - b for a, b in zip(self.fields(), other.fields(), strict=True)))

    def fields(self) -> tuple[int, int, int]:
        return self.rows_read, self.rows_written, self.alarm_sets

    def per_job(self, jobs: int) -> Row:
        """Rows written, setAlarm calls, both (COST.md bills a setAlarm as a row written), rows read."""
        written, alarms = self.rows_written / jobs, self.alarm_sets / jobs
        return written, alarms, written + alarms, self.rows_read / jobs


class MeterTrail:
    """A shard's meter read over time through the companion, summed across instances of the object.

    A new instance (``startedAt`` changed) counts from zero; the old one's counts up to the last reading
    are kept, so only its work between that reading and its end is missed.
    """

    def __init__(self, workers: Workers, shard: str) -> None:
        self._url = f"{workers.companion_url}/meter?shard={quoted(shard)}"
        self._last, self._instance = self._read()
        self._base, self._closed = self._last, Counts()
        self.instances = 1

    def _read(self) -> tuple[Counts, int]:
        body = ok(request(self._url), 200, "GET /meter")
        counts = Counts(int(body["rowsRead"]), int(body["rowsWritten"]), int(body["alarmSets"]))
        return counts, int(body["startedAt"])

    def poll(self) -> Counts:
        counts, instance = self._read()
        if instance != self._instance:
            self._closed = self._closed + (self._last - self._base)
            self._base, self._instance = Counts(), instance
            self.instances += 1
        self._last = counts
        return self._closed + (self._last - self._base)


@dataclass(frozen=True)
class MeteredWorkload:
    timing: ManyTiming
    to_completed: Counts  # from the enqueue until D1 showed every job COMPLETED
    sweep: Counts | None  # from then until the sweep was over (None: not awaited)
    instances: int
    late: int  # jobs that finished after their first projection was due (ADR-0119)


def metered_workload_a(workers: Workers, jobs: int, await_sweep: bool) -> MeteredWorkload:
    trail = MeterTrail(workers, COST_SHARD)  # addressing the shard creates it; the meter runs no SQL
    inputs = [{"binding": COST_BINDING, "payload": {"n": n}} for n in range(jobs)]
    timing = run_many(workers, inputs, trail.poll)
    done = trail.poll()
    late = sum(
        job["updated_at"] - job["created_at"] >= FIRST_PROJECTION_DELAY_MS
        for offset in range(0, jobs, PAGE)
        for job in completed_jobs(workers, COST_BINDING, PAGE, offset)[1]
    )
    if not await_sweep:
        return MeteredWorkload(timing, done, None, trail.instances, late)
    due_s = (timing.last_completed_ms + DEFAULT_SWEEP_AFTER_MS) / 1000
    print(f"  waiting {due_s - time.time():.0f} s for the sweep (sweep_after_ms, 5 min) ...", flush=True)
    last, still_since = done, time.monotonic()
    while not (
        time.time() > due_s
        and time.monotonic() - still_since >= SWEEP_QUIET_S
        and last.rows_written > done.rows_written
    ):
        if time.time() > due_s + SWEEP_TIMEOUT_S:
            raise RuntimeError(f"no sweep on {COST_SHARD} within {SWEEP_TIMEOUT_S} s of its due time")
        pause(METER_POLL_S)
        current = trail.poll()
        if current != last:
            last, still_since = current, time.monotonic()
    return MeteredWorkload(timing, done, last - done, trail.instances, late)


def replay_workload_a(jobs: int) -> WorkloadFigures:
    """Workload A as ``bench/cloudflare_cost.py`` measures it (``measure`` runs A, B and C)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    server = ReplayServer(node)
    try:
        measurement = asyncio.run(measure(server, jobs))
    finally:
        server.close()
    return next(figure for figure in measurement.workloads if figure.name == "A")


# ------------------------------------------------------------------------------------------ the report


def print_start(label: str, times: StartTimes) -> None:
    print(
        f"  {label}: prepared (setup, vendoring, bundle, D1 migrations) at {times.prepared_s:.1f} s,"
        f" 'Ready on' at {times.ready_s:.1f} s, first GET /api/flows {times.first_ms:.0f} ms"
        f" (HTTP {times.first_status}), first 200 at {times.first_200_s:.1f} s; the next request"
        f" {times.second_ms:.0f} ms; the companion's first answer {times.companion_first_ms:.0f} ms"
    )


def print_latency(first: JobTiming, timings: list[JobTiming]) -> None:
    print(
        f"  the first job, on a fresh {LATENCY_BINDING}#0 Durable Object (not counted below): enqueue"
        f" {first.enqueue_ms:.0f} ms, COMPLETED (shard) {first.shard_ms:.0f} ms,"
        f" seen in D1 {first.d1_ms:.0f} ms"
    )
    print(
        f"  then {len(timings)} jobs, each enqueued once the one before was seen in D1 (ms after the POST):"
    )
    for label, values in (
        ("POST /api/jobs answered 201", [t.enqueue_ms for t in timings]),
        ("dispatched (the shard's dispatched_at)", [t.dispatched_ms for t in timings]),
        ("COMPLETED as the shard reports it", [t.shard_ms for t in timings]),
        ("COMPLETED seen in D1 (GET /api/jobs/{id})", [t.d1_ms for t in timings]),
    ):
        p50, p95 = percentiles(values)
        print(f"    {label:<42} p50 {p50:6.0f}   p95 {p95:6.0f}   max {max(values):6.0f}")
    print(
        "  'as the shard reports it': the job's COMPLETED stamp (updated_at, taken by the shard with the"
        " host clock this script reads). 'seen in D1': the first REST poll showing COMPLETED, polls"
        f" {JOB_POLL_S * 1000:.0f} ms apart; the read model is written by the tick after the report."
        " Between dispatch and COMPLETED a lone message waits in the Queue for max_batch_timeout (1 s,"
        " wrangler.jsonc) before its batch of one is delivered."
    )


def print_cost(metered: MeteredWorkload, replay: WorkloadFigures) -> tuple[Row, Row]:
    """The per-job table; returns the workerd total and the replay's rows (``Counts.per_job``)."""
    jobs = metered.timing.jobs
    total = metered.to_completed + (metered.sweep or Counts())
    replayed = Counts(replay.do_rows_read, replay.do_rows_written, replay.set_alarm_calls)
    columns = [("to COMPLETED", metered.to_completed.per_job(jobs))]
    if metered.sweep is not None:
        columns += [("sweep", metered.sweep.per_job(jobs)), ("workerd total", total.per_job(jobs))]
    columns.append(("SQL replay", replayed.per_job(replay.jobs)))
    print("  per completed job" + " " * 25 + "".join(f"{name:>15}" for name, _ in columns))
    labels = ("DO rows written (cursor.rowsWritten)", "setAlarm calls", "DO rows written + setAlarm")
    for index, label in enumerate((*labels, "DO rows read")):
        print(f"  {label:<42}" + "".join(f"{values[index]:15.2f}" for _, values in columns))
    timing = metered.timing
    print(
        f"  ({jobs} jobs in one enqueue_many from the companion, answered in {timing.call_s:.2f} s; all"
        f" COMPLETED {timing.shard_s:.1f} s after the call as the shard reports it; {metered.instances}"
        f" instance(s) of {COST_SHARD} metered{'' if metered.sweep else '; the sweep was not awaited'})"
    )
    return total.per_job(jobs), replayed.per_job(replay.jobs)


def print_differences(metered: MeteredWorkload, replay: WorkloadFigures, ours: Row, theirs: Row) -> None:
    jobs = metered.timing.jobs
    extra_alarms = (ours[1] - theirs[1]) * jobs
    per_alarm = (ours[3] - theirs[3]) * jobs / extra_alarms if extra_alarms > 0 else 0.0
    print("  Why workerd and the replay differ (same engine, same SQL, same DO SQLite counters):")
    print(
        f"  - cursor rows written {ours[0] - theirs[0]:+.2f}/job. {metered.late} of {jobs} jobs finished"
        f" {FIRST_PROJECTION_DELAY_MS} ms or more after they were enqueued (the run took"
        f" {metered.timing.shard_s:.1f} s). Such a job is usually projected once while it waits and again"
        " when done (ADR-0119), an outbox mark and its delete, 2 rows: at most"
        f" +{2 * metered.late / jobs:.2f}/job from that. The replay's FixedClock stands still while the"
        " whole queue is consumed, so there every job settles within that second."
    )
    print(
        f"  - setAlarm {ours[1]:.3f}/job here, {theirs[1]:.3f} in the replay"
        f" ({replay.alarm_runs} alarm runs there): reports arrive in Queue batches of up to 10 spread"
        " over the run and each arms the alarm at once (J-165), so the shard ticks about once per batch"
        " instead of once per drained queue; every tick re-reads part of the job table, about"
        f" {per_alarm:.0f} rows per extra setAlarm, hence read {ours[3] - theirs[3]:+.2f}/job."
    )
    print(
        "  - dev only: the companion reaches the shard through wrangler's dev registry, which drops the"
        " object's name, so each new instance reads (and once writes) its tsumugi_object_name row; a"
        " restarted instance also re-runs the schema check. Both are a few rows per instance, not per job."
    )
    if metered.sweep is None:
        print("  - the sweep (about 1 row written per job, a DELETE) is in the replay, not here.")


def report(
    workers: TimedWorkers, fresh: StartTimes, replay: WorkloadFigures, args: argparse.Namespace
) -> None:
    def phase(title: str) -> Callable[[], None]:
        print(f"\n{title}", flush=True)
        before = workers.reloads()

        def end() -> None:
            reloads = workers.reloads() - before
            if reloads:
                print(
                    f"  ! wrangler reloaded the Workers during this part ({reloads} '{RELOAD_LINE}' lines: a"
                    " file under src/ changed), so its figures include that pause and restarted objects"
                )

        return end

    print("\n1. cold start of scripts/workerd-dev, from process start to the first 200 answer")
    print_start("start 1, fresh state directory", fresh)
    print_start("start 2, restarted on the same state", workers.times)
    print(
        "  The first request is sent as soon as wrangler prints 'Ready on': it is the first request the"
        " new isolate serves (bearer auth and the read model's migration check, one D1 query); Pyodide"
        " and the app's imports load before that line."
    )
    end = phase(f"2. enqueue -> COMPLETED, one {LATENCY_BINDING} job at a time on the idle Worker")
    first = time_one_job(workers)
    timings = [time_one_job(workers) for _ in range(args.latency_jobs)]
    print_latency(first, timings)
    end()
    end = phase(f"3. enqueue_many of {args.many} {MANY_BINDING} jobs (2 shards) through the companion")
    jobs = [
        {"binding": MANY_BINDING, "payload": {"values": [n]}, "partition_key": f"key-{n}"}
        for n in range(args.many)
    ]
    many = run_many(workers, jobs, lambda: None)
    print(
        f"  the call answered in {many.call_s:.2f} s; all {many.jobs} COMPLETED {many.shard_s:.1f} s after"
        f" the call as the shards report it ({many.jobs / many.shard_s:.0f} jobs/s),"
        f" seen in D1 at {many.d1_s:.1f} s"
    )
    end()
    end = phase(f"4. COST.md workload A in workerd ({COST_SHARD}), next to bench/cloudflare_cost.py's replay")
    metered = metered_workload_a(workers, args.jobs, not args.no_sweep)
    ours, theirs = print_cost(metered, replay)
    print_differences(metered, replay, ours, theirs)
    end()
    alarms, unnamed = workers.failed_runs()
    print(
        f"\nThe example's log: {alarms} alarm run(s) failed; {unnamed} RPC(s) were refused with {UNNAMED}"
        " and retried after identify (expected once per object reached through the dev registry)."
    )
    if alarms:
        print(
            "  ! a failed alarm run is retried by workerd (6 times, then dropped); when it is the shard's"
            f" {UNNAMED}, an evicted object woken by its alarm did not know its name (ctx.id.name is empty)"
        )
    p50, p95 = percentiles([t.shard_ms for t in timings])
    print(
        "\n(summary: the restart's start; latency and enqueue_many as the shards report COMPLETED; rows per"
        " job with 1 per setAlarm, the sweep included unless --no-sweep)"
    )
    print(
        f"workerd: cold start {workers.times.first_200_s:.1f} s"
        f" (first request {workers.times.first_ms:.0f} ms);"
        f" latency p50={p50:.0f} ms p95={p95:.0f} ms; enqueue_many {many.jobs} in {many.shard_s:.1f} s;"
        f" DO rows/job written={ours[2]:.1f} read={ours[3]:.1f}"
        f" (replay written={theirs[2]:.1f} read={theirs[3]:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-jobs", type=int, default=50, help="sequential jobs for the latency")
    parser.add_argument("--many", type=int, default=1000, help="Tally jobs in one enqueue_many")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs of workload A (COST.md: 1000)")
    parser.add_argument("--no-sweep", action="store_true", help="skip waiting 5 minutes for A's sweep")
    parser.add_argument("--keep", action="store_true", help="keep the state directory and the logs")
    args = parser.parse_args()
    reason = why_workerd_cannot_run()
    if reason is not None:
        print(f"workerd_bench: Python Workers cannot run in workerd here: {reason}", file=sys.stderr)
        return 2
    print(f"SQL replay of workload A, {args.jobs} jobs (bench/cloudflare_cost.py's measure) ...", flush=True)
    replay = replay_workload_a(args.jobs)
    scratch = Path(tempfile.mkdtemp(prefix="workerd-bench-"))
    keep = args.keep
    try:
        (scratch / "state").mkdir()
        first = TimedWorkers(scratch / "state", scratch / "start-1.log")
        first.close()
        workers = TimedWorkers(scratch / "state", scratch / "start-2.log")
        try:
            report(workers, first.times, replay, args)
        finally:
            workers.close()
    except BaseException:
        keep = True
        raise
    finally:
        if keep:
            print(f"state and logs kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
