"""A settled run and its nodes as ``tsumugi.telemetry`` records (ADR-0143)."""

from __future__ import annotations

from tsumugi.storage.run_store import DONE_STATES, RunStore
from tsumugi.telemetry import NodeRecord, RunRecord


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
