"""Cancel, retry or state of an unknown run answer "gone" and leave no storage behind (F-28; ADR-0116)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.local.flow_support import TOKEN, path_id, rest_client

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"Noop": Noop}
flow = create_flow(PERFORMERS)


@flow
def ONE(f: FlowBuilder) -> None:
    f.node("only", "Noop", input=lambda i, d: {})


async def test_unknown_run_calls_answer_gone_without_a_database_file(tmp_path: Path) -> None:
    app = define_tsumugi(performers=PERFORMERS, flows={"ONE": ONE}, auth=bearer_auth(TOKEN))
    state_dir = tmp_path / "state"
    async with LocalRuntime(app, state_dir, exports=PERFORMERS, cron=False) as runtime:
        async with rest_client(app.asgi(runtime.env)) as client:
            for action in ("cancel", "retry"):
                answer = await client.post(f"/api/runs/{path_id('ONE:nobody')}/{action}")
                assert answer.status_code == 410  # F-28: gone
        assert await app.run_for(runtime.env, "ONE:nobody").state() is None  # F-28, S-20
        runs_dir = state_dir / "runs"
        assert list(runs_dir.glob("*.sqlite3")) == []  # no storage for a run nobody started
        started = await app.start(runtime.env, "ONE", {})
        assert await app.run_for(runtime.env, started).state() in ("RUNNING", "COMPLETED")  # F-20
        assert len(list(runs_dir.glob("*.sqlite3"))) == 1  # the started run has its own file
