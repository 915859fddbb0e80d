"""Runs are closed and reopened like evicted Durable Objects, and behave exactly as before (ADR-0132).

Many runs in flight through a cap of two open runs still run each node once (F-35, F-45); a settled run is
closed, and its sweep alarm reopens it, sweeps it and closes it again (F-82); a restart opens only the
runs the open journal names (ADR-0052).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tests import polling
from tests.local.open_files import fds_under

from tsumugi.application import define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.engine_wiring import EngineWiring
from tsumugi.runtimes.local.runtime import LocalRuntime

START = 1_700_000_000_000
SWEEP_AFTER_MS = 60_000
RUNS = 30
DEADLINE_S = 60.0  # a few seconds here; the margin is for a loaded CI machine
PERFORMED: Counter[tuple[int, str]] = Counter()


class Count(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        PERFORMED[(payload["run"], payload["node"])] += 1


PERFORMERS = {"Count": Count}
flow = create_flow(PERFORMERS)


@flow
def PAIR(f: FlowBuilder) -> None:
    first = f.node("first", "Count", input=lambda i, d: {"run": i["n"], "node": "first"})
    f.node("second", "Count", after={"first": first}, input=lambda i, d: {"run": i["n"], "node": "second"})


APP = define_tsumugi(performers=PERFORMERS, flows={"PAIR": PAIR}, runs={"sweep_after_ms": SWEEP_AFTER_MS})


async def _states(runtime: LocalRuntime, run_ids: list[str]) -> list[str | None]:
    return [await APP.run_for(runtime.env, run_id).state() for run_id in run_ids]


async def test_runs_in_flight_beyond_the_caps_each_run_every_node_once(tmp_path: Path) -> None:
    PERFORMED.clear()
    runtime = LocalRuntime(
        APP,
        tmp_path / "state",
        exports=PERFORMERS,
        cron=False,
        max_idle_coordinators=2,
        wiring=EngineWiring(max_connected_runs=2),
    )
    async with runtime:
        run_ids = [await APP.start(runtime.env, "PAIR", {"n": n}) for n in range(RUNS)]

        async def all_completed() -> bool:
            return await _states(runtime, run_ids) == ["COMPLETED"] * RUNS

        await polling.until(all_completed, f"{RUNS} runs COMPLETED", DEADLINE_S, interval_s=0.01)

        async def all_closed() -> bool:  # a run closes once its last projection is written, just after
            return bool(runtime.env.RUN.coordinators.open_count() == 0)

        await polling.until(all_closed, "every settled run closed", DEADLINE_S, interval_s=0.01)
    assert PERFORMED == {(n, node): 1 for n in range(RUNS) for node in ("first", "second")}
    assert fds_under(tmp_path / "state") == 0  # stop closed every file, runs included


async def test_a_settled_run_is_closed_then_reopened_by_its_sweep_alarm_and_swept(tmp_path: Path) -> None:
    clock = FixedClock(START)
    state_dir = tmp_path / "state"
    async with LocalRuntime(APP, state_dir, clock=clock, exports=PERFORMERS, cron=False) as runtime:
        run_id = await APP.start(runtime.env, "PAIR", {"n": 0})
        run = APP.run_for(runtime.env, run_id)

        async def closed_and_completed() -> bool:
            return runtime.env.RUN.coordinators.open_count() == 0 and await run.state() == "COMPLETED"

        await polling.until(closed_and_completed, "the run COMPLETED and closed", DEADLINE_S)
        # ADR-0052: the sweep alarm is in the future, so it is on disk; the run needs nothing else
        assert runtime.alarms.get(f"runs/{run_id}") == START + SWEEP_AFTER_MS
        assert runtime.journal.names("runs") == []

        clock.advance(SWEEP_AFTER_MS)
        await runtime.alarms.fire_due()
        assert await run.state() is None  # F-82: swept, and a state call does not bring it back
        assert runtime.alarms.get(f"runs/{run_id}") is None
        assert runtime.env.RUN.coordinators.open_count() == 0


async def test_a_restart_opens_no_run_that_was_closed(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    async with LocalRuntime(APP, state_dir, exports=PERFORMERS, cron=False) as runtime:
        run_ids = [await APP.start(runtime.env, "PAIR", {"n": n}) for n in range(3)]

        async def all_completed() -> bool:
            return await _states(runtime, run_ids) == ["COMPLETED"] * 3

        await polling.until(all_completed, "3 runs COMPLETED", DEADLINE_S)
    async with LocalRuntime(APP, state_dir, exports=PERFORMERS, cron=False) as runtime:
        await runtime.alarms.fire_due()  # nothing is due: the sweeps are a minute away
        assert runtime.env.RUN.coordinators.open_count() == 0
        assert fds_under(state_dir / "runs") == 0
        assert await _states(runtime, run_ids) == ["COMPLETED"] * 3  # reopened on demand


async def test_a_state_directory_from_before_the_journal_ticks_its_runs_once(tmp_path: Path) -> None:
    # ADR-0132: without the journal, any run file may hide an alarm a kill lost (ADR-0052)
    state_dir = tmp_path / "state"
    clock = FixedClock(START)
    async with LocalRuntime(APP, state_dir, clock=clock, exports=PERFORMERS, cron=False) as runtime:
        run_id = await APP.start(runtime.env, "PAIR", {"n": 0})
        run = APP.run_for(runtime.env, run_id)
        await polling.until(lambda: run.state(), "the run", DEADLINE_S)
        await polling.until(
            lambda: runtime.env.RUN.coordinators.open_count() == 0, "the run closed", DEADLINE_S
        )
    (state_dir / "open_coordinators.sqlite3").unlink()
    (state_dir / "alarms.sqlite3").unlink()  # and its sweep alarm: only a tick of its file re-arms it
    clock.advance(SWEEP_AFTER_MS)
    async with LocalRuntime(APP, state_dir, clock=clock, exports=PERFORMERS, cron=False) as runtime:
        await runtime.alarms.fire_due()  # the start-up tick re-arms the sweep, already due
        await runtime.alarms.fire_due()
        assert await APP.run_for(runtime.env, run_id).state() is None  # F-82: swept
