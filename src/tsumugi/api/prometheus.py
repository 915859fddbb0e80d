"""``GET /metrics``: the Prometheus text exposition of a runtime that offers its gauges (ADR-0139).

Served only where ``RestOptions.prometheus`` finds ``RuntimeGauges`` for the request's env (the local
runtime binds them; a Worker has no scrape target), behind the same pipeline as ``/api``. The series:

- ``tsumugi_jobs{binding,state}`` gauge: jobs in the read model (``/api/stats`` per binding);
- ``tsumugi_runs{flow,state}`` gauge: runs in the read model;
- ``tsumugi_jobs_settled_total{binding,state}``, ``tsumugi_attempts_total{binding,state}`` counters and
  ``tsumugi_attempt_duration_seconds{binding,state}`` histogram: the jobs that reached a terminal state
  since the runtime started, the attempts they took, and how long each one's last attempt ran (from
  dispatch to settling), from the local metrics table;
- ``tsumugi_queue_depth`` gauge: messages in the runtime's dispatch queue;
- ``tsumugi_policy_blocked{binding,shard,reason}`` gauge: 1 when the shard's last tick was held back by
  ``reason`` (pause, capacity, tokens, per_key, per_key_tokens), asked of shard 0 as ``/api/diagnostics``.

``prometheus-client`` is an optional extra, imported on the first scrape; without it the answer is 501.
"""
# M-3

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from starlette.responses import Response

from tsumugi.api.options import RestOptions, RuntimeGauges
from tsumugi.api.prometheus_reads import (
    DURATION_BUCKETS_MS,
    JOBS_SQL,
    RUNS_SQL,
    Labels,
    SettledCounters,
    SettledTotals,
    counts_by,
)
from tsumugi.api.wire import error_response
from tsumugi.core.json_types import JsonMapping
from tsumugi.storage.read_model_schema import ALL_JOB_STATES, TERMINAL_JOB_STATES

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

METRICS_PATH: Final = "/metrics"
# The classic text format: every name here is a legacy name, so no UTF-8 escaping is ever needed.
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
CLIENT_MISSING: Final = "metrics need prometheus-client: pip install 'tsumugi[prometheus]'"
RUN_STATES: Final = ("RUNNING", "COMPLETED", "FAILED", "CANCELLED")  # F-33
# The shard's ``blocked`` answer (J-145, J-149b) by the label value each flag is exported under.
BLOCK_REASONS: Final = (
    ("pause", "paused"),
    ("capacity", "capacity"),
    ("tokens", "tokens"),
    ("per_key", "perKey"),
    ("per_key_tokens", "perKeyTokens"),
)
DIAGNOSED_SHARD: Final = 0  # as /api/diagnostics: the limits a tick hit are per shard


@dataclass(frozen=True)
class Scrape:
    """Everything one exposition shows, read before any family is built."""

    jobs: Mapping[Labels, int]
    runs: Mapping[Labels, int]
    settled: Mapping[Labels, SettledTotals]
    queue_depth: int
    blocked: Mapping[str, Mapping[str, object]]


def _filled(found: Mapping[Labels, int], names: Iterable[str], states: Sequence[str]) -> dict[Labels, int]:
    """Every registered name in every state, zero where nothing was counted, plus whatever else was found."""
    counts = {(name, state): 0 for name in names for state in states}
    counts.update(found)
    return dict(sorted(counts.items()))


class PrometheusEndpoint:
    """Answers ``GET /metrics``; keeps one ``SettledCounters`` per runtime for the life of the app."""

    def __init__(self) -> None:
        self._counters: dict[int, tuple[RuntimeGauges, SettledCounters]] = {}

    async def serve(self, options: RestOptions, env: object, runtime: RuntimeGauges) -> Response:
        try:
            import prometheus_client  # noqa: F401  (ADR-0139: the optional extra)
        except ImportError:
            return error_response(CLIENT_MISSING, 501)
        scrape = await self._read(options, env, runtime)
        return Response(exposition(scrape), status_code=200, media_type=CONTENT_TYPE)

    def _counters_of(self, runtime: RuntimeGauges) -> SettledCounters:
        held = self._counters.get(id(runtime))
        if held is None or held[0] is not runtime:
            held = self._counters[id(runtime)] = (runtime, SettledCounters(runtime.started_at_ms))
        return held[1]

    async def _read(self, options: RestOptions, env: object, runtime: RuntimeGauges) -> Scrape:
        db = options.database(env)
        shards = options.shards(env)
        names = list(options.performers or ())
        answers = await asyncio.gather(
            *(shards.get(f"{name}#{DIAGNOSED_SHARD}").diagnostics() for name in names)
        )
        settled = await self._counters_of(runtime).refresh(db)
        zeros = {(name, state): SettledTotals() for name in names for state in TERMINAL_JOB_STATES}
        return Scrape(
            jobs=_filled(await counts_by(db, JOBS_SQL, "binding"), names, ALL_JOB_STATES),
            runs=_filled(await counts_by(db, RUNS_SQL, "flow"), options.flows, RUN_STATES),
            settled=dict(sorted({**zeros, **settled}.items())),
            queue_depth=runtime.queue_depth(),
            blocked={name: _blocked(answer) for name, answer in zip(names, answers, strict=True)},
        )


def _blocked(diagnostics: JsonMapping) -> JsonMapping:
    """The shard's ``blocked`` flags from its diagnostics; none when it sent none."""
    blocked = diagnostics.get("blocked")
    return blocked if isinstance(blocked, dict) else {}


def exposition(scrape: Scrape) -> bytes:
    """The text exposition of ``scrape``; needs ``prometheus-client``."""
    from prometheus_client import generate_latest

    families = list(_families(scrape))

    class _Collected:
        def collect(self) -> Iterable[Metric]:
            return families

    return generate_latest(_Collected())


def _families(scrape: Scrape) -> Iterable[Metric]:
    from prometheus_client.metrics_core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    jobs = GaugeMetricFamily("tsumugi_jobs", "Jobs in the read model.", labels=["binding", "state"])
    for labels, count in scrape.jobs.items():
        jobs.add_metric(labels, count)
    yield jobs
    runs = GaugeMetricFamily("tsumugi_runs", "Flow runs in the read model.", labels=["flow", "state"])
    for labels, count in scrape.runs.items():
        runs.add_metric(labels, count)
    yield runs
    settled = CounterMetricFamily(
        "tsumugi_jobs_settled", "Jobs that reached a terminal state since the runtime started.",
        labels=["binding", "state"],
    )  # fmt: skip
    attempts = CounterMetricFamily(
        "tsumugi_attempts", "Attempts taken by the jobs settled since the runtime started.",
        labels=["binding", "state"],
    )  # fmt: skip
    durations = HistogramMetricFamily(
        "tsumugi_attempt_duration_seconds", "How long the last attempt of each settled job ran.",
        labels=["binding", "state"],
    )  # fmt: skip
    for labels, totals in scrape.settled.items():
        settled.add_metric(labels, totals.jobs)
        attempts.add_metric(labels, totals.attempts)
        buckets = [
            (_le(bound), float(n)) for bound, n in zip(DURATION_BUCKETS_MS, totals.buckets, strict=True)
        ]
        durations.add_metric(labels, [*buckets, ("+Inf", float(totals.jobs))], totals.duration_ms / 1000)
    yield from (settled, attempts, durations)
    yield GaugeMetricFamily(
        "tsumugi_queue_depth", "Messages in the dispatch queue, leased or waiting.", value=scrape.queue_depth
    )
    blocked = GaugeMetricFamily(
        "tsumugi_policy_blocked", "1 when the shard's last tick was held back by this limit.",
        labels=["binding", "shard", "reason"],
    )  # fmt: skip
    for binding, flags in scrape.blocked.items():
        for reason, flag in BLOCK_REASONS:
            blocked.add_metric([binding, str(DIAGNOSED_SHARD), reason], 1 if flags.get(flag) else 0)
    yield blocked


def _le(bound_ms: int) -> str:
    """A bucket bound in seconds, as Prometheus clients spell them (``0.005``, ``1.0``, ``900.0``)."""
    return repr(bound_ms / 1000)
