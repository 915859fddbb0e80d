"""Applying ``advance`` decisions to a run's storage (T-4; ADR-0073).

One ``DecisionApplier`` lives for one tick. Skips, expansions, aggregations and cancellations are
written at once; starts reserve their job id and are collected, then enqueued together by the tick.
"""
# F-36, F-40, F-49, F-69

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from tsumugi.coordinator.enqueue_wire import PAYLOAD_TEXT_KEY
from tsumugi.coordinator.run_ports import RunPeers
from tsumugi.core import wire_format
from tsumugi.core.flow.advance import Decision, DecisionType
from tsumugi.core.flow.building import (
    WHEN_FALSE,
    ChildDraft,
    build_deps,
    build_job,
    expand_fan_out,
    subflow_input,
    when_allows,
)
from tsumugi.core.flow.ids import subflow_run_id
from tsumugi.core.flow.model import Flow, NodeKind, NodeSpec
from tsumugi.core.flow.results import (
    MAX_COLLECTED_CHILDREN,
    collect_limit_error,
    collected_dep_value,
    decode_result,
    fan_out_summary,
)
from tsumugi.core.flow.waits import WaitKind, is_due, wake_at_of
from tsumugi.core.json_types import JsonMapping, JsonValue
from tsumugi.core.wire_format import (
    new_local_id,
    resolve_shard,
    shard_name,
    shard_name_of,
    validate_local_id,
)
from tsumugi.errors import TsumugiError
from tsumugi.ports import ShardNamespace, SqlValue
from tsumugi.storage.run_store import ChildRow, NodeRow, RunRow, RunStore
from tsumugi.storage.run_waits import RunWaitStore

NodeJob: TypeAlias = dict[str, object]  # a node's job as an enqueue input: payload and camelCase options
NO_OPTIONS: Final = "{}"  # a dynamic node without options, as its ``options`` column holds it


@dataclass(slots=True)
class ChildStart:
    node_id: str
    child_run_id: str
    flow: str
    input: object


@dataclass(slots=True)
class TickWork:
    """What one tick collected: jobs to enqueue per shard, child runs to start, nodes it wrote."""

    jobs: dict[str, list[NodeJob]] = field(default_factory=dict)
    job_nodes: list[str] = field(default_factory=list)
    job_ids: dict[str, str] = field(default_factory=dict)  # node id -> job id reserved, not yet stored
    child_starts: list[ChildStart] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)


class DecisionApplier:
    def __init__(
        self,
        *,
        store: RunStore,
        run: RunRow,
        flow: Flow,
        now_ms: int,
        max_nodes: int,
        shards_of: Mapping[str, int],
        new_id: Callable[[], str],
        shards: ShardNamespace,
        runs: RunPeers,
        waits: RunWaitStore | None = None,
    ) -> None:
        self.store = store
        self.waits = waits or RunWaitStore(store.sql)
        self.run = run
        self.flow = flow
        self.now_ms = now_ms
        self.max_nodes = max_nodes
        self.shards_of = shards_of
        self.new_id = new_id
        # Ids of the default maker are valid by construction; another's (a test's) are checked (J-15).
        self._checked_id: Callable[[], str] = (
            new_id if new_id is new_local_id else lambda: validate_local_id(new_id())
        )
        self.shards = shards
        self.runs = runs
        self.flow_input = wire_format.loads(run.input)
        self.work = TickWork()
        self._shards: dict[str, str] = {}  # binding -> the shard of this run's new jobs

    async def apply(
        self, decision: Decision, cancelling: bool, expired: bool, node: NodeRow | None = None
    ) -> None:
        """Apply one decision; ``node`` is the decided node's row when the caller has just read it."""
        if decision.type is not DecisionType.CANCEL:
            self.apply_at_once(decision, node)
            return
        node = node or self.store.node(decision.id)
        if node is not None:
            await self._cancel(node, cancelling, expired)

    def apply_all(self, decisions: Sequence[Decision], rows: Mapping[str, NodeRow]) -> None:
        """``apply_at_once`` for each decision, with its node's row from ``rows`` where it is there; then
        store the job ids reserved so far, in the same transaction as the round."""
        for decision in decisions:
            self.apply_at_once(decision, rows.get(decision.id))
        self.store_job_ids()

    def store_job_ids(self) -> None:
        """Store the job ids reserved and not stored yet: they must be on disk before the enqueue."""
        # F-41
        work = self.work
        if work.job_ids:
            self.store.set_job_ids(work.job_ids, self.now_ms)
            work.job_ids = {}

    def apply_at_once(self, decision: Decision, node: NodeRow | None = None) -> None:
        """``apply`` for any decision but a cancellation, the one that waits for another coordinator."""
        node = node or self.store.node(decision.id)
        if node is None:
            return
        match decision.type:
            case DecisionType.SKIP:
                self._write(node.id, state="SKIPPED", error=decision.reason)
            case DecisionType.AGGREGATE:
                summary = fan_out_summary(self.store.child_states(node.id))
                self._write(node.id, state="COMPLETED", result=wire_format.dumps(summary))
            case DecisionType.EXPAND:
                self._expand(node)
            case DecisionType.START:
                self._start_job(node)
            case DecisionType.START_RUN:
                self._start_run(node)
            case DecisionType.WAIT:
                self._start_wait(node)
            case DecisionType.CANCEL:
                raise ValueError("a cancellation is applied by apply(), not at once")

    # ------------------------------------------------------------------ helpers
    def _write(self, node_id: str, **values: SqlValue) -> None:
        self.store.update_node(node_id, self.now_ms, **values)
        self.work.touched.add(node_id)

    def _fail(self, node_id: str, error: str) -> None:
        self._write(node_id, state="FAILED", error=error)

    def dep_value(self, node_id: str) -> JsonValue:
        """A node's result for its dependents (ADR-0072).

        A stored result, or a fan-out's summary and child results.
        """
        dep = self.store.node(node_id)
        if dep is None:
            return None
        value = decode_result(dep.result)
        spec = self.flow.node(node_id)
        if spec is not None and spec.collect and isinstance(value, dict):
            kids = self.store.children(node_id)
            return collected_dep_value(
                value, {k.id.rpartition(":")[2]: decode_result(k.result) for k in kids}
            )
        return value

    def _gate(self, node: NodeRow, spec: NodeSpec) -> dict[str, object] | None:
        """Evaluate ``when`` (T-4); the deps when the node may run, else None after writing the outcome."""
        deps = build_deps(spec, self.dep_value)
        try:
            allowed = when_allows(spec, self.flow_input, deps)
        except Exception as exc:  # T-4: an exception in when fails the node
            self._fail(node.id, _message(exc))
            return None
        if not allowed:
            self._write(node.id, state="SKIPPED", error=WHEN_FALSE)
            return None
        return deps

    # ------------------------------------------------------------------ decisions
    def _expand(self, node: NodeRow) -> None:
        spec = self.flow.node(node.id)
        if spec is None or spec.kind is not NodeKind.FAN_OUT:
            self._fail(node.id, f"fan-out definition is missing: {node.id}")
            return
        deps = self._gate(node, spec)
        if deps is None:
            return
        try:
            drafts = expand_fan_out(spec, self.flow_input, deps)
        except Exception as exc:  # ADR-0073: a failing mapping function fails its node
            self._fail(node.id, _message(exc))
            return
        if self.store.node_count() + len(drafts) > self.max_nodes:  # F-49, F-83
            self._fail(node.id, f"node count exceeded the limit: {self.max_nodes}")
            return
        if spec.collect and len(drafts) > MAX_COLLECTED_CHILDREN:
            self._fail(node.id, collect_limit_error(node.id))
            return
        children = child_rows(drafts)
        inserted = self.store.insert_children(node.id, "fanOut", children, self.store.next_seq(), self.now_ms)
        self.work.touched.update(inserted)
        self._write(node.id, state="RUNNING")

    def _start_job(self, node: NodeRow) -> None:
        job = self._dynamic_job(node) if node.origin != "static" else self._static_job(node)
        if job is None:
            return
        job_id = node.job_id
        if job_id is None:
            try:
                shard = self._shard(node.binding)
                job_id = f"{shard}:{self._checked_id()}"
            except TsumugiError as exc:  # F-57: a spawn binding that cannot name a job fails its node
                self._fail(node.id, _message(exc))
                return
            # F-41: the tick stores the id before the enqueue, so a retried tick re-sends the same job.
            self.work.job_ids[node.id] = job_id
        else:
            shard = shard_name_of(job_id)
        job["id"], job["binding"], job["nodeId"] = job_id, node.binding, node.id
        job["runId"] = job["partitionKey"] = self.run.id
        self.work.jobs.setdefault(shard, []).append(job)
        self.work.job_nodes.append(node.id)

    @staticmethod
    def _dynamic_job(node: NodeRow) -> NodeJob:
        """A fan-out or spawned child's job: its options and payload as they were frozen.

        The payload goes as the JSON text stored at expansion, which the shard stores as it is.
        """
        job: NodeJob = wire_format.loads(node.options) if node.options not in (None, "", NO_OPTIONS) else {}
        job[PAYLOAD_TEXT_KEY] = node.payload if node.payload is not None else "null"
        return job

    def _static_job(self, node: NodeRow) -> NodeJob | None:
        """A static job node's job, built from the code now; None when the node failed or was skipped."""
        spec = self.flow.node(node.id)
        if spec is None or spec.kind is not NodeKind.JOB:
            self._fail(node.id, f"node definition is missing: {node.id}")
            return None
        deps = self._gate(node, spec)
        if deps is None:
            return None
        try:
            return build_job(spec, self.flow_input, deps)
        except Exception as exc:  # ADR-0073
            self._fail(node.id, _message(exc))
            return None

    def _shard(self, binding: str) -> str:
        """The shard a new job of ``binding`` goes to in this run, the same for each of its jobs."""
        # J-19: the run's id is the partition key
        shard = self._shards.get(binding)
        if shard is None:
            index = resolve_shard(binding, self.shards_of.get(binding, 1), self.run.id)
            shard = self._shards[binding] = shard_name(binding, index)
        return shard

    def _start_run(self, node: NodeRow) -> None:
        spec = self.flow.node(node.id)
        if spec is None or spec.kind is not NodeKind.SUBFLOW or node.subflow is None:
            self._fail(node.id, f"subflow definition is missing: {node.id}")
            return
        deps = self._gate(node, spec)
        if deps is None:
            return
        try:
            child_id = node.child_run_id or subflow_run_id(node.subflow, self.run.id, node.id)
        except TsumugiError as exc:
            self._fail(node.id, f"invalid child run id: {_message(exc)}")
            return
        try:
            child_input = subflow_input(spec, self.flow_input, deps)
        except Exception as exc:  # ADR-0073: fails before the id is kept, so no link to a run never started
            self._fail(node.id, _message(exc))
            return
        if node.child_run_id is None:
            self.store.update_node(node.id, self.now_ms, child_run_id=child_id)
        self.work.child_starts.append(ChildStart(node.id, child_id, node.subflow, child_input))

    def _start_wait(self, node: NodeRow) -> None:
        """ADR-0147: note when the wait ends; a kept event (ADR-0148) or a past instant ends it at once."""
        spec = self.flow.node(node.id)
        if spec is None or spec.wait is None:
            self._fail(node.id, f"wait definition is missing: {node.id}")
            return
        deps = self._gate(node, spec)
        if deps is None:
            return
        wait = spec.wait
        try:
            wake_at = wake_at_of(node.id, wait, self.flow_input, deps, self.now_ms)
        except Exception as exc:  # ADR-0073: a failing mapping function fails its node
            self._fail(node.id, _message(exc))
            return
        kept = self.waits.kept_event(wait.event) if wait.event is not None else None
        if kept is not None:
            self.waits.event_taken(kept.event, node.id)
            self._write(node.id, state="COMPLETED", result=kept.payload)
        elif wait.kind is WaitKind.SLEEP and is_due(wake_at, self.now_ms):
            self._write(node.id, state="COMPLETED", wake_at=wake_at)
        else:
            self._write(node.id, state="RUNNING", wake_at=wake_at, on_timeout=wait.on_timeout.value)

    async def _cancel(self, node: NodeRow, cancelling: bool, expired: bool) -> None:
        """stop what has not run; running jobs and child runs are asked, then waited for."""
        # F-69, F-74
        if node.state == "SCHEDULED" and node.job_id is not None:
            outcome = await self.shards.get(shard_name_of(node.job_id)).cancel(node.job_id)
            accepted = bool(outcome.get("ok")) and not outcome.get("requested")
            if not (accepted or outcome.get("reason") == "gone"):
                return  # refused or only requested (J-135): the job's terminal event settles the node
        elif node.state == "RUNNING" and node.wait_kind is None:
            if node.child_run_id is not None:
                await self.runs.get(node.child_run_id).cancel()  # F-64: the node follows notify_child
            return
        elif node.state not in ("PENDING", "RUNNING"):
            return  # a RUNNING node here is a waiting one (ADR-0147): it holds nothing to ask
        if cancelling or not expired:
            self._write(node.id, state="CANCELLED")
        else:
            deadline = f"run deadline exceeded: {self.run.deadline_ms}ms"
            self._write(node.id, state="FAILED", error=deadline)


def child_row(node_id: str, binding: str, payload: object, options: Mapping[str, object]) -> ChildRow:
    """A fan-out or spawned child with its payload and options frozen as JSON."""
    # F-49, F-56
    frozen = wire_format.dumps(dict(options)) if options else NO_OPTIONS
    return ChildRow(node_id, binding, wire_format.dumps(payload), frozen)


def child_rows(drafts: Iterable[ChildDraft]) -> list[ChildRow]:
    """``child_row`` of each fan-out child; the options children share are encoded once."""
    rows: list[ChildRow] = []
    shared: Mapping[str, object] | None = None
    frozen = NO_OPTIONS
    for draft in drafts:
        if draft.options is not shared:
            shared = draft.options
            frozen = wire_format.dumps(dict(shared)) if shared else NO_OPTIONS
        rows.append(ChildRow(draft.id, draft.binding, wire_format.dumps(draft.payload), frozen))
    return rows


def static_row(entry: JsonMapping, seq: int, now_ms: int) -> dict[str, SqlValue]:
    """The node row of one entry of the pinned shape (``shape_of``), at run start."""
    # F-18, F-24
    return {
        "id": str(entry["id"]),
        "binding": str(entry["binding"]),
        "state": "PENDING",
        "container": 1 if entry["container"] else 0,
        "origin": "static",
        "after": wire_format.dumps(entry["after"]),
        "subflow": text_or_none(entry.get("subflow")),
        "trigger": text_or_none(entry.get("trigger", "success")),
        "wait_kind": text_or_none(entry.get("wait")),  # ADR-0147
        "wait_event": text_or_none(entry.get("event")),
        "seq": seq,
        "created_at": now_ms,
        "updated_at": now_ms,
    }


def text_or_none(value: object) -> str | None:
    """A field that holds text or nothing (a shape entry's subflow or trigger, an event's error)."""
    return value if value is None or isinstance(value, str) else str(value)


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
