"""The example app (src/app.py): its performers, and the whole app on the local runtime."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests import polling

from tsumugi.runtimes.local.app_loader import LoadedApp, load_app
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.testing.context import create_test_context, run_performer

SETTLE_DEADLINE_S = 20.0


@pytest.fixture(scope="module")
def example() -> LoadedApp:
    return load_app()  # the default APP: this repository's src/app.py


@pytest.fixture
def app_module(example: LoadedApp) -> ModuleType:
    return example.module


def test_the_example_loads_on_cpython_without_workers_modules(example: LoadedApp) -> None:
    # 10.8 / issue 9: the same app module the Worker exports, importable without Pyodide
    probe = (
        "import sys; from tsumugi.runtimes.local.app_loader import load_app; load_app(); "
        "print(sorted({'js', 'pyodide', 'workers'} & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
    assert set(example.exports) == {
        "Hello",
        "Boom",
        "Slow",
        "ListNames",
        "Greet",
        "Report",
        "Tally",
        "Shout",
    }  # J-60
    assert set(example.tsumugi.binding_names) == set(example.exports)


async def test_the_performers_answer_as_documented(app_module: ModuleType) -> None:
    assert await run_performer(app_module.ListNames, {"prefix": "p"}) == {
        "ok": True,
        "value": {"names": ["p-1", "p-2", "p-3"]},
    }
    assert await run_performer(app_module.Greet, {"name": "ann"}) == {"ok": True, "value": {"greeted": "ann"}}
    assert await run_performer(app_module.Hello, {"name": "ann"}) == {"ok": True, "value": None}
    assert await run_performer(app_module.Report, {"total": 3, "failed": 1}) == {"ok": True, "value": None}
    failed = await run_performer(app_module.Boom, {})
    assert failed["ok"] is False and str(failed["error"]) == "intentional failure"


async def test_slow_heartbeats_each_step_and_stops_when_cancelled(
    app_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "SLOW_STEP_S", 0)  # the steps' length is not what is tested
    ctx = create_test_context()
    assert await run_performer(app_module.Slow, {"steps": 4}, ctx) == {"ok": True, "value": {"steps": 4}}
    assert ctx.heartbeats == [0.25, 0.5, 0.75, 1.0]
    cancelled = create_test_context(cancel_requested=True)  # J-69a
    stopped = await run_performer(app_module.Slow, {"steps": 4}, cancelled)
    assert stopped["ok"] is False  # seed page: a performer aborts by raising, so the job ends CANCELLED
    assert str(stopped["error"]) == "cancelled after step 1 of 4"
    assert cancelled.heartbeats == [0.25]


async def _until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    await polling.until(condition, what, SETTLE_DEADLINE_S, interval_s=0.02)


async def test_the_example_runs_on_the_local_runtime(example: LoadedApp, tmp_path: Path) -> None:
    # J-71, J-73: success stores the result; an exhausted failure ends FAILED
    tsumugi = example.tsumugi
    async with LocalRuntime(tsumugi, tmp_path / "state", exports=example.exports, cron=False) as runtime:
        env = runtime.env
        greet = await tsumugi.enqueue(env, binding="Greet", payload={"name": "ann"})
        boom = await tsumugi.enqueue(env, binding="Boom", payload={}, max_attempts=1)
        names = await tsumugi.enqueue_many(env, [{"binding": "ListNames", "payload": {"prefix": "x"}}])

        async def state(job_id: str) -> Any:
            return await env.JOB_SHARD.get(job_id.split(":")[0]).state_of(job_id)

        async def settled() -> bool:
            return [await state(greet), await state(boom), await state(names[0])] == [
                "COMPLETED",
                "FAILED",
                "COMPLETED",
            ]

        await _until(settled, "the example's jobs to settle")


async def test_a_remote_performer_naming_its_class_runs_in_process_locally(
    example: LoadedApp, tmp_path: Path
) -> None:
    # ADR-0129: Shout is remote(Shout) (J-62); with no companion Worker, tsumugi dev performs it here,
    # and its binding counts as present, so the environment check passes (J-205).
    tsumugi = example.tsumugi
    async with LocalRuntime(tsumugi, tmp_path / "state", exports={}, cron=False) as runtime:
        env = runtime.env
        assert tsumugi.missing_bindings(env) == []
        job_id = await tsumugi.enqueue(env, binding="Shout", payload={"text": "hi"})

        async def projected() -> Any:
            rows = await runtime.read_model.all("SELECT state, result FROM job WHERE id = ?", [job_id])
            return rows and rows[0]["state"] == "COMPLETED" and rows[0]

        row = await polling.until(projected, "the Shout job to complete", SETTLE_DEADLINE_S, interval_s=0.02)
        assert row["result"] == '{"shouted":"HI","cancelRequested":false}'  # it heartbeat, too
