"""RunCoordinator: the TsumugiRun Durable Object minus the Durable Object.

One instance per run, named by the run id, with its own SQLite and one alarm, a class over its
``RunContext`` (ADR-0160). Methods record in one transaction and arm; the alarm's tick (``run_tick``)
does the work, so actor-to-actor calls never nest.
"""
# F-20..F-28, F-45, F-77

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from tsumugi.clock import Clock
from tsumugi.coordinator.mutation_result import DONE, GONE, INVALID_STATE, MutationResult
from tsumugi.coordinator.run_context import RunContext
from tsumugi.coordinator.run_decisions import child_row, static_row, text_or_none
from tsumugi.coordinator.run_ports import RunPeers, RunProjection, RunProjectionBeside
from tsumugi.coordinator.run_tick import RunTick
from tsumugi.coordinator.run_waits import take_event
from tsumugi.core import wire_format
from tsumugi.core.config import RunSettings
from tsumugi.core.flow.advance import is_node_terminal
from tsumugi.core.flow.building import spawn_options
from tsumugi.core.flow.ids import child_node_id
from tsumugi.core.flow.model import Flow, shape_of, validate_deadline_ms
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.wire_format import new_local_id
from tsumugi.errors import InvalidFlowError, TsumugiError
from tsumugi.ports import AlarmPort, ShardNamespace, SqlExecutor, SqlValue
from tsumugi.storage.run_store import NodeJobState, RunStore

CHILD_STATES: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED"})  # F-63: what a child run reports
# A node settled by a job event, written with others: (node id, state, result text, error).
Settled = tuple[str, str, SqlValue, SqlValue]


class RunCoordinator:
    """Owns one run: its row, its nodes, its outbox and its alarm, held by its ``RunContext``."""

    def __init__(
        self,
        name: str,
        sql: SqlExecutor,
        *,
        clock: Clock,
        alarm: AlarmPort,
        shards: ShardNamespace,
        runs: RunPeers,
        read_model: RunProjection | None,
        flows: Mapping[str, Flow],
        settings: RunSettings | None = None,
        shards_of: Mapping[str, int] | None = None,
        new_id: Callable[[], str] = new_local_id,
        storage_exists: Callable[[], bool] | None = None,
        binding_settings: Callable[[str], JsonMapping] | None = None,
        projection: RunProjectionBeside | None = None,
    ) -> None:
        """``storage_exists``: whether any storage is there yet; without it, storage always is (ADR-0116).

        ``binding_settings(binding)``: the settings a client enqueue carries to that binding.
        ``projection``: where one runs, the read model is written beside the run from its file
        (ADR-0179), else the run writes ``read_model`` itself.
        """
        # J-50
        self.ctx = RunContext(
            name,
            sql,
            clock=clock,
            alarm=alarm,
            shards=shards,
            runs=runs,
            read_model=read_model,
            flows=flows,
            settings=settings,
            shards_of=shards_of,
            new_id=new_id,
            storage_exists=storage_exists,
            binding_settings=binding_settings,
            projection=projection,
        )

    @property
    def name(self) -> str:
        return self.ctx.name

    def dormant(self) -> bool:
        """Whether the runtime may release this run's storage and memory until a call or its alarm."""
        return self.ctx.dormant()

    # ------------------------------------------------------------------ RPC surface
    async def start(
        self,
        flow: str,
        input: object,
        deadline_ms: int | None = None,
        parent: Mapping[str, str] | None = None,
        depth: int = 0,
    ) -> JsonObject:
        """Create the run once; a repeated start returns the existing id before any check."""
        # F-20, F-21
        ctx = self.ctx
        now = ctx.clock.now()
        ctx.ensure_schema()

        def create() -> JsonObject:
            if ctx.store.run() is not None:
                return {"id": ctx.name, "created": False}
            definition = ctx.flows.get(flow)
            if definition is None:
                raise InvalidFlowError(f"flow is not registered: {flow}")
            if depth > ctx.settings.max_depth:
                raise InvalidFlowError(f"subflow nesting exceeded the limit: {ctx.settings.max_depth}")
            effective = deadline_ms if deadline_ms is not None else definition.deadline_ms
            deadline = None if effective is None else validate_deadline_ms(effective)
            shape = shape_of(definition, ctx.flows)
            ctx.store.insert_run(
                {
                    "id": ctx.name,
                    "flow": flow,
                    "state": "RUNNING",
                    "input": wire_format.dumps(input),
                    "shape": wire_format.dumps(shape),
                    "created_at": now,
                    "updated_at": now,
                    "parent_run_id": parent["runId"] if parent else None,
                    "parent_node_id": parent["nodeId"] if parent else None,
                    "depth": depth,
                    "deadline_ms": deadline,
                    "deadline_at": None if deadline is None else now + deadline,
                }
            )
            nodes = [static_row(entry, index, now) for index, entry in enumerate(shape)]
            ctx.store.insert_nodes(nodes)
            ctx.record_changes(str(node["id"]) for node in nodes)
            return {"id": ctx.name, "created": True}

        outcome = ctx.transaction(create)
        if outcome["created"]:
            await ctx.arm(now)
        return dict(outcome)

    async def state(self) -> str | None:
        """The run state, or None when no run exists; never creates one."""
        # F-28, S-20
        ctx = self.ctx
        if not ctx.has_storage():
            return None
        run = ctx.store.run()
        return None if run is None else run.state

    async def notify(self, events: Sequence[Mapping[str, object]]) -> None:
        """Record terminal job events; successors start on the next tick."""
        # F-45, F-56
        ctx = self.ctx
        now = ctx.clock.now()
        if not ctx.has_storage():
            return

        def record() -> bool:
            if ctx.store.run() is None:
                return False
            touched: set[str] = set()
            settled: dict[str, Settled] = {}  # plain settles, written together
            rows = ctx.store.job_states({str(e.get("nodeId")) for e in events})
            for event in events:
                node_id = str(event.get("nodeId"))
                if node_id in settled:  # a repeated event re-reads what the first wrote
                    ctx.store.settle_nodes(list(settled.values()), now)
                    settled.clear()
                node = rows.pop(node_id, None) or ctx.store.job_states([node_id]).get(node_id)
                touched |= self._apply_event(event, node, now, settled)
            ctx.store.settle_nodes(list(settled.values()), now)
            if touched:
                ctx.record_changes(touched)
            return True

        if ctx.transaction(record):
            await ctx.arm(now)

    def _apply_event(
        self, event: Mapping[str, object], node: NodeJobState | None, now: int, settled: dict[str, Settled]
    ) -> set[str]:
        ctx = self.ctx
        state = str(event.get("state"))
        if node is None or node.job_id != event.get("jobId") or not is_node_terminal(state):
            return set()  # F-45: unknown node or a stale job from before a resume
        if state == "CANCELLED" and is_node_terminal(node.state):
            return set()
        touched = {node.id}
        spawns = event.get("spawns")
        if (
            isinstance(spawns, list) and spawns and state == "COMPLETED"
        ):  # F-55: a failed attempt's spawns are dropped
            spawned = insert_spawns(ctx.store, ctx.settings.max_nodes, node.id, spawns, now)
            if isinstance(spawned, str):
                # F-56 (port): over the limit the parent stays FAILED with the limit error.
                ctx.store.update_node(node.id, now, state="FAILED", error=spawned, result=None)
                return touched
            touched |= spawned
        error = event.get("error")
        settled[node.id] = (node.id, state, _result_text(event.get("result")), text_or_none(error))
        return touched

    async def notify_child(self, node_id: str, child_run_id: str, state: str) -> None:
        """A child run ended: mirror its state on the subflow node."""
        # F-63
        ctx = self.ctx
        now = ctx.clock.now()
        if not ctx.has_storage():
            return

        def record() -> bool:
            node = ctx.store.node(node_id) if ctx.store.run() is not None else None
            if node is None or node.child_run_id != child_run_id or state not in CHILD_STATES:
                return False
            error = f"child run failed: {child_run_id}" if state == "FAILED" else None
            ctx.store.update_node(node_id, now, state=state, error=error)
            ctx.record_changes([node_id])
            return True

        if ctx.transaction(record):
            await ctx.arm(now)

    async def cancel(self) -> JsonObject:
        """Ask the run to stop; nodes are stopped by the tick."""
        # F-69
        ctx = self.ctx
        now = ctx.clock.now()
        if not ctx.has_storage():
            return GONE.to_wire()

        def mark() -> MutationResult:
            run = ctx.store.run()
            if run is None:
                return GONE
            if run.state != "RUNNING":
                return INVALID_STATE
            ctx.store.update_run(now, cancelling=1)
            ctx.snapshot_run()
            return DONE

        outcome = ctx.transaction(mark)
        if outcome.ok:
            await ctx.arm(now)
        return outcome.to_wire()

    async def retry(self) -> JsonObject:
        """Resume a FAILED run: COMPLETED nodes are kept, the rest run again."""
        # F-77, F-78
        ctx = self.ctx
        now = ctx.clock.now()
        if not ctx.has_storage():
            return GONE.to_wire()

        def resume() -> MutationResult:
            run = ctx.store.run()
            if run is None:
                return GONE
            if run.state != "FAILED":
                return INVALID_STATE
            reset: set[str] = set()
            parents = {n.parent for n in ctx.store.nodes() if n.parent is not None}
            for node in ctx.store.nodes():
                if node.state not in ("FAILED", "STALLED", "SKIPPED", "CANCELLED"):
                    continue
                container_with_kids = bool(node.container) and node.id in parents
                ctx.store.update_node(
                    node.id,
                    now,
                    state="RUNNING" if container_with_kids else "PENDING",
                    job_id=node.job_id if node.container else None,
                    child_run_id=None,
                    error=None,
                    wake_at=None,  # ADR-0147: a reset wait waits afresh
                )
                reset.add(node.id)
            deadline_at = None if run.deadline_ms is None else now + run.deadline_ms  # F-75
            ctx.store.update_run(now, state="RUNNING", parent_notified=0, expired=0, deadline_at=deadline_at)
            ctx.record_changes(reset)
            return DONE

        outcome = ctx.transaction(resume)
        if outcome.ok:
            await ctx.arm(now)
        return outcome.to_wire()

    async def send_event(self, event: str, payload: object = None) -> JsonObject:
        """Deliver ``event`` to the node waiting for it, or keep it until that node waits (ADR-0148)."""
        ctx = self.ctx
        now = ctx.clock.now()
        if not ctx.has_storage():
            return GONE.to_wire()

        def snapshot(node_id: str) -> None:
            ctx.record_changes([node_id])

        outcome = ctx.transaction(lambda: take_event(ctx.store, ctx.waits, event, payload, now, snapshot))
        if outcome.get("state") == "COMPLETED":
            await ctx.arm(now)  # its dependents start on the next tick (F-45)
        return dict(outcome)

    async def alarm(self) -> None:
        """The alarm handler: one tick at a time; a failed tick retries in 5 s."""
        # F-34, F-38
        ctx = self.ctx
        if not ctx.has_storage():
            return  # a stale alarm of a run that never existed: nothing to tick
        await ctx.tick(lambda now: RunTick(ctx, now).run(), failure=f"run tick failed: {ctx.name}")


def _result_text(result: object) -> str | None:
    """Events carry the result as JSON text; a decoded value is encoded the same way."""
    # F-45
    return result if result is None or isinstance(result, str) else wire_format.dumps(result)


def insert_spawns(
    store: RunStore, max_nodes: int, parent: str, spawns: Sequence[object], now: int
) -> set[str] | str:
    """Insert spawned children first, so nobody sees the parent settled without them."""
    # F-56
    if store.node_count() + len(spawns) > max_nodes:
        return f"node count exceeded the limit: {max_nodes}"
    try:
        children = [
            child_row(
                child_node_id(parent, _field(spawn, "id")),
                str(_field(spawn, "binding")),
                _field(spawn, "payload"),
                spawn_options(_options(_field(spawn, "options"))),
            )
            for spawn in spawns
        ]
    except TsumugiError as exc:  # F-57 (port): a bad spawn id fails its parent, never the batch
        return str(exc)
    return set(store.insert_children(parent, "spawn", children, store.next_seq(), now))


def _field(spawn: object, name: str) -> object:
    """A spawn request arrives as a wire dict, or as ``performer.SpawnRequest`` in-process."""
    return spawn.get(name) if isinstance(spawn, Mapping) else getattr(spawn, name, None)


def _options(value: object) -> Mapping[str, object] | None:
    return value if isinstance(value, Mapping) else None
