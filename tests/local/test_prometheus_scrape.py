"""``GET /metrics`` scraped from a real `tsumugi dev` on 127.0.0.1 after jobs and a flow ran (ADR-0139)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.local.conftest import DevProcess, wait_for
from tests.local.flow_support import HEADERS, TOKEN, path_id, rest_client
from tests.local.metrics_app import tsumugi

from tsumugi.application.rest_surface import runtime_gauges
from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.runtime import LocalRuntime

METRICS_APP = str(Path(__file__).with_name("metrics_app.py"))
DEADLINE_S = 30.0
FAST_RETRY = {"kind": "fixed", "delayMs": 10}  # J-100: retries without the default 1 s backoff
ONE_TOKEN_AN_HOUR = {"tokens": 1, "intervalMs": 3_600_000}  # the second job waits: a tokens block
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "STALLED"}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[dict[str, str], Samples]:
    """Family types by name, and every sample by name and labels; the parser rejects malformed text."""
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        assert family.name.startswith("tsumugi_"), family.name
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"duplicate series {key}"
            samples[key] = sample.value
    return types, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    state_dir = tmp_path_factory.mktemp("prometheus") / "state"
    dev = DevProcess(METRICS_APP, state_dir, {"TSUMUGI_TOKEN": TOKEN})
    yield dev
    code, output = dev.terminate()
    assert code == 0, output


@pytest.fixture
def client(server: DevProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=HEADERS, timeout=10) as opened:
        yield opened


def _enqueue(client: httpx.Client, binding: str, **options: Any) -> str:
    created = client.post("/api/jobs", json={"binding": binding, "payload": {}, **options})
    assert created.status_code == 201, created.text
    job_id: str = created.json()["id"]
    return job_id


def _state(client: httpx.Client, job_id: str) -> str | None:
    answer = client.get(f"/api/jobs/{path_id(job_id)}")
    return str(answer.json()["job"]["state"]) if answer.status_code == 200 else None


def _scrape(client: httpx.Client) -> Samples:
    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return parse(answer.text)[1]


def test_metrics_need_the_api_token(server: DevProcess) -> None:
    # the same bearer auth as /api, whatever the dashboard fallback would do.
    bare = httpx.get(f"{server.url}/metrics", timeout=10)
    assert (bare.status_code, bare.json()) == (401, {"error": "unauthorized"})
    wrong = httpx.get(f"{server.url}/metrics", headers={"authorization": "Bearer nope"}, timeout=10)
    assert (wrong.status_code, wrong.json()) == (401, {"error": "unauthorized"})


def test_a_scrape_after_jobs_and_a_flow(server: DevProcess, client: httpx.Client, tmp_path: Path) -> None:
    types, before = parse(client.get("/metrics").text)
    assert types == {
        "tsumugi_jobs": "gauge",
        "tsumugi_runs": "gauge",
        "tsumugi_jobs_settled": "counter",
        "tsumugi_attempts": "counter",
        "tsumugi_attempt_duration_seconds": "histogram",
        "tsumugi_queue_depth": "gauge",
        "tsumugi_policy_blocked": "gauge",
    }
    # Every registered binding and flow is there before anything ran, at zero.
    assert value(before, "tsumugi_jobs", binding="Ok", state="COMPLETED") == 0
    assert value(before, "tsumugi_runs", flow="STEPS", state="COMPLETED") == 0
    assert value(before, "tsumugi_jobs_settled_total", binding="Ok", state="COMPLETED") == 0
    assert value(before, "tsumugi_policy_blocked", binding="Held", shard="0", reason="pause") == 0

    settled = [_enqueue(client, "Ok") for _ in range(3)]
    settled += [_enqueue(client, "Flaky", backoff=FAST_RETRY) for _ in range(2)]
    settled.append(_enqueue(client, "Broken", maxAttempts=2, backoff=FAST_RETRY))
    run = client.post("/api/runs", json={"flow": "STEPS", "input": {}})
    assert run.status_code == 201, run.text
    run_id = run.json()["id"]
    assert client.post("/api/bindings/Held/policy", json={"paused": True}).status_code == 200
    assert client.post("/api/bindings/Limited/policy", json={"rate": ONE_TOKEN_AN_HOUR}).status_code == 200
    held = _enqueue(client, "Held")
    limited = [_enqueue(client, "Limited") for _ in range(2)]
    for job_id in settled:
        wait_for(lambda job_id=job_id: _state(client, job_id) in TERMINAL, DEADLINE_S, f"{job_id} settled")
    wait_for(
        lambda: client.get(f"/api/runs/{path_id(run_id)}").json().get("run", {}).get("state") == "COMPLETED",
        DEADLINE_S,
        "the run completed",
    )
    # Hold comes last: a message is acknowledged when its whole batch is done, so one that shared
    # Hold's batch would stay out with it.
    release = tmp_path / "release"
    hold = _enqueue(client, "Hold", payload={"release": str(release)})
    # ADR-0007: an at-least-once job is not claimed, so it stays QUEUED while it runs.
    wait_for(lambda: _state(client, hold) == "QUEUED", DEADLINE_S, "Hold dispatched in the read model")
    wait_for(lambda: _state(client, limited[0]) == "COMPLETED", DEADLINE_S, "the first Limited job done")
    wait_for(lambda: _state(client, limited[1]) == "SCHEDULED", DEADLINE_S, "the second Limited job waiting")
    assert _state(client, held) == "SCHEDULED"
    counts = {  # (binding, final state): (jobs settled, attempts they took)
        ("Ok", "COMPLETED"): (3, 3),
        ("Flaky", "COMPLETED"): (2, 4),
        ("Broken", "FAILED"): (1, 2),
        ("Step", "COMPLETED"): (2, 2),
        ("Limited", "COMPLETED"): (1, 1),
        ("Hold", "COMPLETED"): (0, 0),
    }

    def settled_in_counters() -> Samples | None:
        # A point is written just after its job's projection (M-4), so the counters may lag a moment.
        samples = _scrape(client)
        found = {
            labels: value(samples, "tsumugi_jobs_settled_total", binding=labels[0], state=labels[1])
            for labels in counts
        }
        return samples if found == {labels: jobs for labels, (jobs, _) in counts.items()} else None

    after: Samples = wait_for(settled_in_counters, DEADLINE_S, "the settled jobs in the counters")

    # Jobs by binding and state, from the read model.
    assert value(after, "tsumugi_jobs", binding="Ok", state="COMPLETED") == 3
    assert value(after, "tsumugi_jobs", binding="Broken", state="FAILED") == 1
    assert value(after, "tsumugi_jobs", binding="Held", state="SCHEDULED") == 1
    assert value(after, "tsumugi_jobs", binding="Limited", state="COMPLETED") == 1
    assert value(after, "tsumugi_jobs", binding="Hold", state="QUEUED") == 1
    assert value(after, "tsumugi_runs", flow="STEPS", state="COMPLETED") == 1
    # Settled jobs, the attempts they took, their last attempts' durations.
    for (binding, state), (jobs, attempts) in counts.items():
        labels = {"binding": binding, "state": state}
        assert value(after, "tsumugi_jobs_settled_total", **labels) == jobs, labels
        assert value(after, "tsumugi_attempts_total", **labels) == attempts, labels
        assert value(after, "tsumugi_attempt_duration_seconds_count", **labels) == jobs, labels
        assert value(after, "tsumugi_attempt_duration_seconds_sum", **labels) >= 0
        buckets = sorted(
            (float(dict(key)["le"]), n)
            for (name, key), n in after.items()
            if name == "tsumugi_attempt_duration_seconds_bucket"
            and {k: v for k, v in key if k != "le"} == labels
        )
        assert [n for _, n in buckets] == sorted(n for _, n in buckets), "cumulative buckets"
        assert buckets[-1] == (float("inf"), jobs)
    # The one message still out: Hold's, leased while it runs.
    assert value(after, "tsumugi_queue_depth") == 1
    # Policy blocks from shard 0's last tick.
    assert value(after, "tsumugi_policy_blocked", binding="Held", shard="0", reason="pause") == 1
    assert value(after, "tsumugi_policy_blocked", binding="Limited", shard="0", reason="tokens") == 1
    assert value(after, "tsumugi_policy_blocked", binding="Limited", shard="0", reason="pause") == 0
    assert value(after, "tsumugi_policy_blocked", binding="Ok", shard="0", reason="capacity") == 0

    release.touch()
    wait_for(lambda: _state(client, hold) == "COMPLETED", DEADLINE_S, "Hold released")

    def drained() -> Samples | None:
        samples = _scrape(client)
        held_settled = value(samples, "tsumugi_jobs_settled_total", binding="Hold", state="COMPLETED") == 1
        return samples if held_settled and value(samples, "tsumugi_queue_depth") == 0 else None

    last: Samples = wait_for(drained, DEADLINE_S, "the queue drained")
    # Counters only grow: what an earlier scrape counted is still counted.
    assert value(last, "tsumugi_attempts_total", binding="Flaky", state="COMPLETED") == 4


async def test_the_local_runtime_binds_its_gauges(tmp_path: Path) -> None:
    # ADR-0139: the runtime offers its queue and its start; the REST surface finds them in env.
    clock = FixedClock(1_700_000_000_000)
    async with LocalRuntime(
        tsumugi, tmp_path / "state", clock=clock, vars={"TSUMUGI_TOKEN": TOKEN}
    ) as runtime:
        gauges = runtime_gauges(runtime.env)
        assert gauges is runtime.env.TSUMUGI_PROMETHEUS
        assert (gauges.started_at_ms, gauges.queue_depth()) == (clock.now(), 0)
        async with rest_client(tsumugi.asgi(runtime.env)) as client:
            response = await client.get("/metrics")
        assert response.status_code == 200
        assert value(parse(response.text)[1], "tsumugi_queue_depth") == 0


async def test_where_nothing_binds_gauges_metrics_is_an_unknown_path() -> None:
    # ADR-0139: a Worker's env (or a var that happens to have the name) serves no /metrics.
    for env in ({"TSUMUGI_TOKEN": TOKEN}, {"TSUMUGI_TOKEN": TOKEN, "TSUMUGI_PROMETHEUS": "on"}):
        assert runtime_gauges(env) is None
        async with rest_client(tsumugi.asgi(env)) as client:
            metrics, unknown = await client.get("/metrics"), await client.get("/no-such-page")
        assert (metrics.status_code, metrics.text) == (unknown.status_code, unknown.text)
        assert metrics.headers["content-type"] == "text/html; charset=UTF-8"  # the dashboard (A-17, U-3)
