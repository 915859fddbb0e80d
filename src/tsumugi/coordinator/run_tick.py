"""One alarm tick of a run: expire, decide, enqueue, start children, project, notify, sweep, re-arm."""
# F-35

from __future__ import annotations

import functools
import logging
from typing import Final

from tsumugi import telemetry
from tsumugi.coordinator.run_context import RunContext
from tsumugi.coordinator.run_decisions import DecisionApplier, TickWork
from tsumugi.coordinator.run_waits import wake_due
from tsumugi.core.flow.advance import Decision, DecisionType
from tsumugi.storage.run_outbox import PROJECT_BATCH
from tsumugi.storage.run_store import DONE_STATES, RunRow, RunStore
from tsumugi.telemetry import NodeRecord, RunRecord

log = logging.getLogger("tsumugi.run")

MAX_ROUNDS: Final = 32  # F-35: decision rounds per tick; a deeper skip cascade continues next tick
MAX_DECISIONS: Final = 200  # F-35: decisions per tick, so one alarm's wall time stays bounded
SWEEP_FLOOR_MS: Final = 1000  # F-35 step 9: never re-arm a sweep sooner than a second from now
# ADR-0073: a cancel that could only be requested is re-sent on this beat instead of spinning at `now`.
BUSY_RECHECK_MS: Final = 5000


class RunTick:
    """One tick of one run at ``now_ms``, over the run's context; ``run`` does it and arms the next alarm."""

    def __init__(self, ctx: RunContext, now_ms: int) -> None:
        self.ctx = ctx
        self.now = now_ms

    def decisions(
        self, limit: int, handled: set[tuple[DecisionType, str]] | None = None
    ) -> tuple[RunRow, list[Decision]]:
        """The run row and the first ``limit`` decisions of ``advance`` not yet ``handled`` (ADR-0115)."""
        run = self.ctx.store.run()
        assert run is not None
        done = handled or set()
        return run, self.ctx.store.live().decisions(
            halting=bool(run.cancelling or run.expired),
            limit=limit,
            skip=lambda d: d[:2] in done,  # its type and node: a tuple made in C
        )

    async def run(self) -> None:
        store = self.ctx.store
        loaded = store.run()
        if loaded is None:
            return
        work = TickWork()
        flow = self.ctx.flows.get(loaded.flow)
        deferred = False
        handled: set[tuple[DecisionType, str]] = set()
        if flow is None:
            self._flow_gone(loaded, work)
        else:
            self._expire(loaded)
            applier = DecisionApplier(
                store=store,
                run=loaded,
                flow=flow,
                now_ms=self.now,
                max_nodes=self.ctx.settings.max_nodes,
                shards_of=self.ctx.shards_of,
                new_id=self.ctx.new_id,
                shards=self.ctx.shards,
                runs=self.ctx.runs,
                waits=self.ctx.waits,
            )
            work = applier.work
            self._wake(work)
            deferred = await self._decide(applier, handled)
            await self._dispatch(applier)
        run, pending = self.decisions(1)
        busy, fresh = bool(pending), bool(self.decisions(1, handled)[1])
        state = self.ctx.store.live().state(cancelling=bool(run.cancelling), expired=bool(run.expired))
        if flow is None:
            # F-92: the run was failed outright; advance must not move it back to RUNNING.
            busy, fresh, state = False, False, run.state
        self._settle(loaded, run, state, work)
        if telemetry.active is not None and loaded.state == "RUNNING" and state != "RUNNING":
            telemetry.active.run_settled(*settled_run(self.ctx.store, self.now))  # ADR-0143
        projected = await self._project()
        notified = await self._notify_parent()
        if await self._sweep(notified):
            return
        await self._rearm(deferred or fresh or projected or not notified, busy)

    def _flow_gone(self, run: RunRow, work: TickWork) -> None:
        """A run whose flow is gone from the app fails, if it is still running; the sweep stays armed."""
        # F-35 step 1, F-92 (port)
        if run.state != "RUNNING":
            return
        for node in self.ctx.store.nodes():
            if node.state == "PENDING":
                self.ctx.store.update_node(
                    node.id, self.now, state="FAILED", error=f"flow is not registered: {run.flow}"
                )
                work.touched.add(node.id)
        self.ctx.store.update_run(self.now, state="FAILED")
        self.ctx.snapshot_run()

    def _expire(self, run: RunRow) -> None:
        """the deadline flag is set once, only while RUNNING, and persisted."""
        # F-73
        if (
            not run.expired
            and run.state == "RUNNING"
            and run.deadline_at is not None
            and run.deadline_at <= self.now
        ):
            self.ctx.store.update_run(self.now, expired=1)

    def _wake(self, work: TickWork) -> None:
        """ADR-0147: due sleeps complete and due event waits time out, unless the run is halting."""
        run = self.ctx.store.run()
        if run is not None and run.state == "RUNNING" and not (run.cancelling or run.expired):
            due = self.ctx.waits.due_waits(self.now)
            if due:
                self.ctx.transaction(functools.partial(wake_due, self.ctx.store, due, self.now, work.touched))

    async def _decide(self, applier: DecisionApplier, handled: set[tuple[DecisionType, str]]) -> bool:
        """Decide what every node does next; True when some decisions wait for the next tick."""
        # F-35 step 3
        applied = 0
        for _ in range(MAX_ROUNDS):
            # One more than the budget left tells "deferred" apart from "all done" (F-35).
            run, fresh = self.decisions(MAX_DECISIONS - applied + 1, handled)
            if not fresh:
                return False
            batch = fresh[: MAX_DECISIONS - applied]
            handled.update(decision[:2] for decision in batch)
            applied += len(batch)
            if any(d.type is DecisionType.CANCEL for d in batch):
                # Only a cancellation awaits another coordinator mid-round, letting events change nodes:
                # each decision reads its node afresh.
                for decision in batch:
                    await applier.apply(decision, bool(run.cancelling), bool(run.expired))
            else:
                # Every other decision writes only its own node without yielding: the round reads the
                # decided nodes at once and commits as one transaction (ADR-0115, ADR-0169).
                rows = {row.id: row for row in self.ctx.store.nodes_by_id([d.id for d in batch])}
                self.ctx.transaction(functools.partial(applier.apply_all, batch, rows))
            if len(fresh) > len(batch):
                return True
        return False

    async def _dispatch(self, applier: DecisionApplier) -> None:
        """Enqueue every job, start every child run, then mark what started."""
        # F-35 steps 4-5
        store, work = self.ctx.store, applier.work
        # F-41: the ids are stored, and committed, before the enqueue: a round of decisions stores its own
        # with it; those a round with a cancellation reserved, here.
        if work.job_ids:
            self.ctx.transaction(applier.store_job_ids)
        for shard, inputs in work.jobs.items():
            await self.ctx.shards.get(shard).enqueue_many(inputs, self.ctx.enqueue_settings(shard))
        scheduled = functools.partial(store.mark_in_state, work.job_nodes, "PENDING", self.now, "SCHEDULED")
        work.touched.update(self.ctx.transaction(scheduled))
        for start in work.child_starts:
            peer = self.ctx.runs.get(start.child_run_id)
            parent = {"runId": self.ctx.name, "nodeId": start.node_id}
            run = store.run()
            assert run is not None
            try:
                outcome = await peer.start(start.flow, start.input, None, parent, run.depth + 1)
                mirrored = None if outcome.get("created") else await self._existing_child(start.child_run_id)
            except Exception as exc:  # F-61: any failure to start fails the node
                store.update_node(
                    start.node_id, self.now, state="FAILED", error=f"failed to start child run: {exc}"
                )
                work.touched.add(start.node_id)
                continue
            # F-61 (port): RUNNING only while nothing has settled the node in the meantime.
            values = {"state": mirrored} if mirrored else {"state": "RUNNING"}
            if mirrored == "FAILED":
                values["error"] = f"child run failed: {start.child_run_id}"
            if store.update_node_in_state(start.node_id, "PENDING", self.now, **values):
                work.touched.add(start.node_id)

    async def _existing_child(self, child_run_id: str) -> str | None:
        """A resumed parent resumes its failed child run; a finished child is mirrored at once."""
        # F-65 (port)
        peer = self.ctx.runs.get(child_run_id)
        state = await peer.state()
        if state == "FAILED":
            await peer.retry()
            return None
        return state if state in ("COMPLETED", "CANCELLED") else None

    def _settle(self, loaded: RunRow, run: RunRow, state: str, work: TickWork) -> None:
        """Store a changed run state and queue what moved for projection, in one transaction."""
        # F-35 step 6
        if state != run.state or work.touched or run.expired != loaded.expired:
            self.ctx.transaction(functools.partial(self._record_settled, run, state, work))

    def _record_settled(self, run: RunRow, state: str, work: TickWork) -> None:
        if state != run.state:
            self.ctx.store.update_run(self.now, state=state)
        self.ctx.record_changes(work.touched)

    async def _project(self) -> bool:
        """Project the outbox into the read model; True when a full batch went out (more may be waiting)."""
        # F-35 step 7
        ctx = self.ctx
        if ctx.projection is not None and ctx.read_model is not None:
            last_seq, rows = ctx.outbox.take(PROJECT_BATCH)
            if not rows:
                return False
            # ADR-0179: the rows taken are read from the run's file and written beside it.
            if await ctx.projection.project(last_seq):
                ctx.outbox.delete_through(last_seq)
                return rows >= PROJECT_BATCH
        batch = ctx.outbox.pending(ctx.name)
        if not batch.rows:
            return False
        if ctx.read_model is not None:
            # Nodes first: a reader that sees the run settled sees its nodes settled too, even where the
            # two writes land apart (D1, or the local writer thread, ADR-0152).
            if batch.nodes:
                await ctx.read_model.upsert_run_nodes(batch.nodes)
            if batch.runs:
                await ctx.read_model.upsert_runs(batch.runs)
        ctx.outbox.delete_through(batch.last_seq)
        return batch.rows >= PROJECT_BATCH

    async def _notify_parent(self) -> bool:
        """tell the parent once the run is terminal; False when that call failed."""
        # F-63
        run = self.ctx.store.run()
        if run is None or run.state == "RUNNING" or run.parent_run_id is None or run.parent_notified:
            return True
        try:
            await self.ctx.runs.get(run.parent_run_id).notify_child(
                str(run.parent_node_id), run.id, run.state
            )
        except Exception:
            log.exception("parent notification failed: %s", run.id)
            return False
        self.ctx.store.update_run(self.now, parent_notified=1)
        return True

    def _retention_ms(self, state: str) -> int:
        settings = self.ctx.settings
        return settings.failed_retention_ms if state == "FAILED" else settings.sweep_after_ms

    async def _sweep(self, notified: bool) -> bool:
        """delete the whole run once it is finished, projected, reported and old enough."""
        # F-82
        run = self.ctx.store.run()
        if run is None or run.state == "RUNNING" or not notified or not self.ctx.outbox.is_empty():
            return False
        if run.updated_at + self._retention_ms(run.state) > self.now:
            return False
        self.ctx.store.delete_everything()
        self.ctx.forget()
        await self.ctx.alarm_port.delete_alarm()
        return True

    async def _rearm(self, now_again: bool, busy: bool) -> None:
        """Arm the run's alarm at its next due instant."""
        # F-35 step 9
        run = self.ctx.store.run()
        assert run is not None
        if now_again:
            await self.ctx.arm(self.now)
        elif busy:
            await self.ctx.arm(self.now + BUSY_RECHECK_MS)
        elif run.state == "RUNNING":
            # ADR-0147: the alarm sits at the earliest of the deadline and the waits' wake instants.
            due = [self.ctx.waits.earliest_wake()]
            if run.deadline_at is not None and not run.expired and run.deadline_at > self.now:
                due.append(run.deadline_at)
            instants = [at for at in due if at is not None]
            if instants:
                await self.ctx.arm(max(min(instants), self.now))
        else:
            await self.ctx.arm(max(run.updated_at + self._retention_ms(run.state), self.now + SWEEP_FLOOR_MS))


def settled_run(store: RunStore, now_ms: int) -> tuple[RunRecord, list[NodeRecord]]:
    """The run that just left RUNNING, and each of its nodes that reached a final state."""
    run = store.run()
    assert run is not None  # called by the tick that settled it
    record = RunRecord(run.id, run.flow, run.state, run.created_at, now_ms)
    nodes = [
        NodeRecord(
            node.id,
            node.binding,
            node.state,
            node.job_id,
            node.child_run_id,
            node.error,
            node.created_at,
            node.updated_at,
        )
        for node in store.nodes()
        if node.state in DONE_STATES
    ]
    return record, nodes
