"""RunCoordinator: the TsumugiRun Durable Object minus the Durable Object.

One instance per run, named by the run id, with its own SQLite and one alarm. Methods record and arm;
the alarm's tick (``run_tick``) does the work, so actor-to-actor calls never nest.
"""
# F-20..F-28, F-45, F-77

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeVar

from tsumugi.clock import Clock
from tsumugi.coordinator.mutation_result import DONE, GONE, INVALID_STATE, MutationResult
from tsumugi.coordinator.run_decisions import static_row, text_or_none
from tsumugi.coordinator.run_ports import RunPeers, RunProjection
from tsumugi.coordinator.run_spawns import insert_spawns
from tsumugi.coordinator.run_tick import RunTick
from tsumugi.coordinator.run_waits import take_event
from tsumugi.core import jsonwire
from tsumugi.core.config import RunSettings
from tsumugi.core.flow.advance import is_node_terminal
from tsumugi.core.flow.model import Flow, shape_of, validate_deadline_ms
from tsumugi.core.ids import new_local_id
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.errors import InvalidFlowError
from tsumugi.ports import AlarmPort, ShardNamespace, SqlExecutor, SqlValue
from tsumugi.storage.run_outbox import RunOutbox
from tsumugi.storage.run_schema import ensure_run_schema
from tsumugi.storage.run_store import NodeRow, RunStore, node_snapshot, run_snapshot
from tsumugi.storage.run_waits import RunWaitStore

T = TypeVar("T")
CHILD_STATES: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED"})  # F-63: what a child run reports
# A node settled by a job event, written with others: (node id, state, result text, error).
Settled = tuple[str, str, SqlValue, SqlValue]


class RunCoordinator:
    """Owns one run: its row, its nodes, its outbox and its alarm."""

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
    ) -> None:
        """``storage_exists``: whether any storage is there yet; without it, storage always is (ADR-0116).

        ``binding_settings(binding)``: the settings a client enqueue carries to that binding.
        """
        # J-50
        self.name = name
        self.clock = clock
        self.alarm_port = alarm
        self.shards = shards
        self.runs = runs
        self.read_model = read_model
        self.flows = flows
        self.settings = settings or RunSettings()
        self.shards_of = shards_of or {}
        self.binding_settings = binding_settings
        self.new_id = new_id
        self.sql = sql
        self.store = RunStore(sql)
        self.outbox = RunOutbox(sql)
        self.waits = RunWaitStore(sql)
        self.ticking = False
        self._storage_exists = storage_exists
        self._schema_ready = False
        self.has_storage()

    def has_storage(self) -> bool:
        """Prepare the schema when there is storage; False means no run was ever created."""
        # F-28
        if not self._schema_ready and (self._storage_exists is None or self._storage_exists()):
            ensure_run_schema(self.sql)
            self._schema_ready = True
        return self._schema_ready

    def dormant(self) -> bool:
        """Whether nothing can happen here before a call or the sweep alarm: no run, or a settled one.

        Settled means finished, projected and reported to its parent (the sweep's conditions but the age);
        a runtime may then release the run's storage connection and memory (ADR-0132).
        """
        if self.ticking:
            return False
        if not self.has_storage():
            return True
        run = self.store.run()
        if run is None:
            return True
        reported = run.parent_run_id is None or bool(run.parent_notified)
        return run.state != "RUNNING" and reported and self.outbox.is_empty()

    def enqueue_settings(self, shard: str) -> JsonMapping | None:
        """What node jobs carry to ``shard`` (``<binding>#<n>``), as a client enqueue would.

        Without them a shard first reached by a run never learns its binding's policy, retention or
        notice targets (seed pages: limits and notifications apply to every job of a binding).
        """
        # J-50
        if self.binding_settings is None:
            return None
        return self.binding_settings(shard.partition("#")[0]) or None

    # ------------------------------------------------------------------ snapshots and alarm
    def snapshot_run(self) -> None:
        run = self.store.run()
        if run is not None:
            self.outbox.append("run", run.id, run_snapshot(run, self.store.counters()))

    def snapshot_nodes(self, node_ids: Sequence[str] | set[str]) -> None:
        """Outbox snapshots of the named nodes only, in node order (ADR-0115)."""
        nodes = self.store.nodes_by_id(set(node_ids))
        self.outbox.append_many("node", ((node.id, node_snapshot(self.name, node)) for node in nodes))

    def transaction(self, body: Callable[[], T]) -> T:
        """``sql.transaction``; a rolled-back body also drops the in-memory progress (ADR-0115)."""
        try:
            return self.sql.transaction(body)
        except BaseException:
            self.store.forget()
            raise

    async def arm(self, at_ms: int) -> None:
        """Earliest wins: never push back an alarm someone else set."""
        # F-37
        current = await self.alarm_port.get_alarm()
        if current is None or current > at_ms:
            await self.alarm_port.set_alarm(at_ms)

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
        now = self.clock.now()
        if not self._schema_ready:
            ensure_run_schema(self.sql)
            self._schema_ready = True

        def create() -> JsonObject:
            if self.store.run() is not None:
                return {"id": self.name, "created": False}
            definition = self.flows.get(flow)
            if definition is None:
                raise InvalidFlowError(f"flow is not registered: {flow}")
            if depth > self.settings.max_depth:
                raise InvalidFlowError(f"subflow nesting exceeded the limit: {self.settings.max_depth}")
            effective = deadline_ms if deadline_ms is not None else definition.deadline_ms
            deadline = None if effective is None else validate_deadline_ms(effective)
            shape = shape_of(definition, self.flows)
            self.store.insert_run(
                {
                    "id": self.name,
                    "flow": flow,
                    "state": "RUNNING",
                    "input": jsonwire.dumps(input),
                    "shape": jsonwire.dumps(shape),
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
            self.store.insert_nodes(nodes)
            self.snapshot_run()
            self.snapshot_nodes({str(node["id"]) for node in nodes})
            return {"id": self.name, "created": True}

        outcome = self.transaction(create)
        if outcome["created"]:
            await self.arm(now)
        return dict(outcome)

    async def state(self) -> str | None:
        """The run state, or None when no run exists; never creates one."""
        # F-28, S-20
        if not self.has_storage():
            return None
        run = self.store.run()
        return None if run is None else run.state

    async def notify(self, events: Sequence[Mapping[str, object]]) -> None:
        """Record terminal job events; successors start on the next tick."""
        # F-45, F-56
        now = self.clock.now()
        if not self.has_storage():
            return

        def record() -> bool:
            if self.store.run() is None:
                return False
            touched: set[str] = set()
            settled: dict[str, Settled] = {}  # plain settles, written together
            rows = {n.id: n for n in self.store.nodes_by_id({str(e.get("nodeId")) for e in events})}
            for event in events:
                node_id = str(event.get("nodeId"))
                if node_id in settled:  # a repeated event re-reads what the first wrote
                    self.store.settle_nodes(list(settled.values()), now)
                    settled.clear()
                node = rows.pop(node_id, None) or self.store.node(node_id)
                touched |= self._apply_event(event, node, now, settled)
            self.store.settle_nodes(list(settled.values()), now)
            if touched:
                self.snapshot_run()
                self.snapshot_nodes(touched)
            return True

        if self.transaction(record):
            await self.arm(now)

    def _apply_event(
        self, event: Mapping[str, object], node: NodeRow | None, now: int, settled: dict[str, Settled]
    ) -> set[str]:
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
            spawned = insert_spawns(self.store, self.settings.max_nodes, node.id, spawns, now)
            if isinstance(spawned, str):
                # F-56 (port): over the limit the parent stays FAILED with the limit error.
                self.store.update_node(node.id, now, state="FAILED", error=spawned, result=None)
                return touched
            touched |= spawned
        error = event.get("error")
        settled[node.id] = (node.id, state, _result_text(event.get("result")), text_or_none(error))
        return touched

    async def notify_child(self, node_id: str, child_run_id: str, state: str) -> None:
        """A child run ended: mirror its state on the subflow node."""
        # F-63
        now = self.clock.now()
        if not self.has_storage():
            return

        def record() -> bool:
            node = self.store.node(node_id) if self.store.run() is not None else None
            if node is None or node.child_run_id != child_run_id or state not in CHILD_STATES:
                return False
            error = f"child run failed: {child_run_id}" if state == "FAILED" else None
            self.store.update_node(node_id, now, state=state, error=error)
            self.snapshot_run()
            self.snapshot_nodes({node_id})
            return True

        if self.transaction(record):
            await self.arm(now)

    async def cancel(self) -> JsonObject:
        """Ask the run to stop; nodes are stopped by the tick."""
        # F-69
        now = self.clock.now()
        if not self.has_storage():
            return GONE.to_wire()

        def mark() -> MutationResult:
            run = self.store.run()
            if run is None:
                return GONE
            if run.state != "RUNNING":
                return INVALID_STATE
            self.store.update_run(now, cancelling=1)
            self.snapshot_run()
            return DONE

        outcome = self.transaction(mark)
        if outcome.ok:
            await self.arm(now)
        return outcome.to_wire()

    async def retry(self) -> JsonObject:
        """Resume a FAILED run: COMPLETED nodes are kept, the rest run again."""
        # F-77, F-78
        now = self.clock.now()
        if not self.has_storage():
            return GONE.to_wire()

        def resume() -> MutationResult:
            run = self.store.run()
            if run is None:
                return GONE
            if run.state != "FAILED":
                return INVALID_STATE
            reset: set[str] = set()
            parents = {n.parent for n in self.store.nodes() if n.parent is not None}
            for node in self.store.nodes():
                if node.state not in ("FAILED", "STALLED", "SKIPPED", "CANCELLED"):
                    continue
                container_with_kids = bool(node.container) and node.id in parents
                self.store.update_node(
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
            self.store.update_run(now, state="RUNNING", parent_notified=0, expired=0, deadline_at=deadline_at)
            self.snapshot_run()
            self.snapshot_nodes(reset)
            return DONE

        outcome = self.transaction(resume)
        if outcome.ok:
            await self.arm(now)
        return outcome.to_wire()

    async def send_event(self, event: str, payload: object = None) -> JsonObject:
        """Deliver ``event`` to the node waiting for it, or keep it until that node waits (ADR-0148)."""
        now = self.clock.now()
        if not self.has_storage():
            return GONE.to_wire()

        def snapshot(node_id: str) -> None:
            self.snapshot_run()
            self.snapshot_nodes({node_id})

        outcome = self.transaction(lambda: take_event(self.store, self.waits, event, payload, now, snapshot))
        if outcome.get("state") == "COMPLETED":
            await self.arm(now)  # its dependents start on the next tick (F-45)
        return dict(outcome)

    async def alarm(self) -> None:
        """The alarm handler: one tick at a time; a failed tick retries in 5 s."""
        # F-34, F-38
        if not self.has_storage():
            return  # a stale alarm of a run that never existed: nothing to tick
        if self.ticking:
            await self.arm(self.clock.now())
            return
        self.ticking = True
        try:
            await RunTick(self).run()
        except Exception:
            RunTick.log.exception("run tick failed: %s", self.name)
            self.store.forget()  # storage is the truth after a failed tick (ADR-0115)
            await self.alarm_port.set_alarm(self.clock.now() + RunTick.RETRY_MS)
        finally:
            self.ticking = False


def _result_text(result: object) -> str | None:
    """Events carry the result as JSON text; a decoded value is encoded the same way."""
    # F-45
    return result if result is None or isinstance(result, str) else jsonwire.dumps(result)
