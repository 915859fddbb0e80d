"""Checks of a node's own options as the builder call happens (T-1; ADR-0070, ADR-0033)."""
# F-14

from __future__ import annotations

from collections.abc import Mapping

from tsumugi.core.flow.model import JOB_OPTION_KEYS, Trigger
from tsumugi.core.options import to_wire_input
from tsumugi.errors import EnqueueError, InvalidFlowError


def trigger_of(node_id: str, trigger: str | None, after: Mapping[str, object] | None) -> Trigger | None:
    """T-1: one of success/failure/always, and only on a node that has dependencies."""
    if trigger is None:
        return None
    if not after:
        raise InvalidFlowError(f"trigger requires after: {node_id}")
    try:
        return Trigger(trigger)
    except ValueError:
        raise InvalidFlowError(f"trigger must be 'success', 'failure' or 'always': {node_id}") from None


def job_options(node_id: str, *values: object) -> dict[str, object]:
    """A node's set job options, given in JOB_OPTION_KEYS order, in camelCase wire form.

    A backoff mapping becomes the dict the shard stores. The options are checked now with the
    enqueue rules, so a bad one fails the definition, not every tick of every run reaching it.
    """
    # J-101, J-29
    given = {name: v for name, v in zip(JOB_OPTION_KEYS, values, strict=True) if v is not None}
    try:
        wire = to_wire_input({"binding": "node", "payload": None, **given})
    except EnqueueError as error:
        raise InvalidFlowError(f"invalid job option in node {node_id}: {error}") from None
    return {JOB_OPTION_KEYS[name]: wire[JOB_OPTION_KEYS[name]] for name in given}


class _NodeOptionRefused(InvalidFlowError, TypeError):
    """An option a node can never take; also a TypeError, like any unexpected keyword."""


def refuse_unique_key(node_id: str, unique_key: object) -> None:
    """A node cannot set unique_key (ADR-0033): its reservation would outlive the run's retries."""
    if unique_key is not None:
        raise _NodeOptionRefused(f"unique_key is not allowed in a node: {node_id}")
