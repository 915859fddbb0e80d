"""Waiting nodes in a run: waking the due ones and taking sent events (ADR-0147, ADR-0148).

Both write through the run's stores only; the tick and ``RunCoordinator.send_event`` call them inside
their own transaction and arm the alarm themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from tsumugi.core.flow.results import encode_result
from tsumugi.core.flow.waits import due_outcome
from tsumugi.core.json_types import JsonObject
from tsumugi.storage.run_store import NodeRow, RunStore
from tsumugi.storage.run_waits import RunWaitStore

PAYLOAD_ERROR: Final = "the event payload cannot be stored (over 8192 chars or not serializable)"


def wake_due(store: RunStore, due: Iterable[NodeRow], now_ms: int, touched: set[str]) -> None:
    """Settle the ``due`` waiting nodes (``RunWaitStore.due_waits``): a sleep completes, a wait times out."""
    for node in due:
        outcome = due_outcome(str(node.wait_kind), node.wait_event, node.on_timeout)
        store.update_node(node.id, now_ms, state=outcome.state, error=outcome.error)
        touched.add(node.id)


def take_event(
    store: RunStore,
    waits: RunWaitStore,
    event: str,
    payload: object,
    now_ms: int,
    snapshot: Callable[[str], None],
) -> JsonObject:
    """Apply one sent event; ``{ok, node, state}`` or ``{ok: False, reason, node?}`` (ADR-0148).

    ``state`` is COMPLETED when the waiting node took the payload as its result, PENDING when the
    event is kept for a node that has not started waiting yet. ``snapshot(node_id)`` records a change.
    """
    run = store.run()
    if run is None:
        return {"ok": False, "reason": "gone"}
    text, error = encode_result(payload)
    if error is not None:
        return {"ok": False, "reason": "invalid-payload", "error": PAYLOAD_ERROR}
    node = waits.waiter(event)
    if node is None:
        return {"ok": False, "reason": "unknown-event"}
    if node.state == "COMPLETED" or waits.kept_event(event) is not None:
        return {"ok": False, "reason": "already-satisfied", "node": node.id}
    if run.state != "RUNNING" or run.cancelling or run.expired:
        return {"ok": False, "reason": "invalid-state", "node": node.id}
    if node.state == "PENDING":
        waits.keep_event(event, text, now_ms, None)
        return {"ok": True, "node": node.id, "state": "PENDING"}
    if node.state != "RUNNING":  # the wait timed out, was skipped or was cancelled
        return {"ok": False, "reason": "invalid-state", "node": node.id}
    waits.keep_event(event, text, now_ms, node.id)
    store.update_node(node.id, now_ms, state="COMPLETED", result=text)
    snapshot(node.id)
    return {"ok": True, "node": node.id, "state": "COMPLETED"}
