"""Measure COST.md workloads A, B and C on Cloudflare's real engines and render the cost table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tests.platform.cost_workloads import WorkloadFigures, apply_migrations, run_workload
from tests.platform.do_replay import ReplayReport, replay
from tests.platform.recording import SqlRecording
from tests.platform.replay_client import LoopbackD1Database, ReplayServer

# COST.md: DO SQLite and D1 bill about $1 per million rows written and $0.001 per million rows read;
# requests and queue operations are small next to writes and are left out of the estimate.
USD_PER_ROW_WRITTEN: Final = 1.0 / 1_000_000
USD_PER_ROW_READ: Final = 0.001 / 1_000_000
WORKLOADS: Final = ("A", "B", "C")


@dataclass
class CostMeasurement:
    workloads: list[WorkloadFigures]
    report: ReplayReport


async def measure(server: ReplayServer, jobs: int = 1000) -> CostMeasurement:
    """Run every workload through the engine, replay its DO statements on Durable Object SQLite."""
    if not getattr(server, "read_model_ready", False):
        await apply_migrations(LoopbackD1Database(server))
        server.read_model_ready = True  # type: ignore[attr-defined]
    recording = SqlRecording()
    figures = [await run_workload(name, server, recording, jobs=jobs) for name in WORKLOADS]
    report = ReplayReport()
    for figure in figures:
        session = SqlRecording()
        session.sessions[figure.session] = recording.sessions[figure.session]
        before_read, before_written = report.rows_read, report.rows_written
        replay(server, session, report)
        figure.do_rows_read = report.rows_read - before_read
        figure.do_rows_written = report.rows_written - before_written
    return CostMeasurement(figures, report)


def usd_per_million_jobs(figure: WorkloadFigures) -> float:
    written = figure.do_rows_written + figure.set_alarm_calls + figure.d1_rows_written
    read = figure.do_rows_read + figure.d1_rows_read
    return (written * USD_PER_ROW_WRITTEN + read * USD_PER_ROW_READ) / figure.jobs * 1_000_000


def render(measurement: CostMeasurement, statements: int = 12) -> str:
    """The COST.md table per completed job, then the ``statements`` most expensive DO statements."""
    figures = measurement.workloads
    lines = ["| per completed job | " + " | ".join(f"{f.name}: {f.jobs} jobs" for f in figures) + " |"]
    lines.append("|---|" + "---:|" * len(figures))

    def row(label: str, values: list[float], digits: int = 2) -> None:
        lines.append(f"| {label} | " + " | ".join(f"{v:.{digits}f}" for v in values) + " |")

    row("DO rows read (sum of cursor.rowsRead)", [f.do_rows_read / f.jobs for f in figures])
    row(
        "DO rows written (cursor.rowsWritten + 1 per setAlarm)",
        [(f.do_rows_written + f.set_alarm_calls) / f.jobs for f in figures],
    )
    row("setAlarm calls", [f.set_alarm_calls / f.jobs for f in figures], 3)
    row("DO requests (RPC calls + alarm runs)", [f.do_requests / f.jobs for f in figures])
    row("Queue messages", [f.queue_messages / f.jobs for f in figures])
    row("sendBatch calls", [f.send_batch_calls / f.jobs for f in figures], 3)
    row("D1 rows written", [f.d1_rows_written / f.jobs for f in figures])
    row("D1 rows read", [f.d1_rows_read / f.jobs for f in figures])
    row("estimated USD per 1M jobs", [usd_per_million_jobs(f) for f in figures], 1)
    lines.append("")
    lines.append("Most expensive DO statements (all workloads; rows written / read, executions):")
    costly = sorted(
        measurement.report.per_sql.items(), key=lambda kv: -(kv[1].rows_written * 1000 + kv[1].rows_read)
    )
    for sql, cost in costly[:statements]:
        text = " ".join(sql.split())
        lines.append(f"  {cost.rows_written:>7} w {cost.rows_read:>8} r {cost.executions:>6}x  {text[:110]}")
    return "\n".join(lines)
