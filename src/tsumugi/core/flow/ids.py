"""Node ids, run ids and the ids derived from them."""
# F-3..F-8, F-10

from __future__ import annotations

import re
from typing import Final, NamedTuple

from tsumugi.core.wire_format import quote
from tsumugi.errors import InvalidFlowError, InvalidRunIdError

_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]+")

# The colon separates a parent from its child (F-3), so it never appears inside one id segment.
CHILD_SEPARATOR: Final = ":"


class ParsedRunId(NamedTuple):
    flow: str
    local_id: str


def is_valid_name(text: object) -> bool:
    """True for a non-empty ``^[A-Za-z0-9_-]+$`` string (node ids, keys, flow names, local ids)."""
    return isinstance(text, str) and _NAME_RE.fullmatch(text) is not None


def validate_node_id(node_id: object) -> str:
    """Return ``node_id`` if it is a valid node id, fan-out key or spawn id, else raise."""
    # F-3
    if not is_valid_name(node_id):
        raise InvalidFlowError(
            f"invalid node id: {quote(str(node_id))} (alphanumeric, hyphen and underscore only)"
        )
    assert isinstance(node_id, str)
    return node_id


def child_node_id(parent_id: str, local: object) -> str:
    """``<parent>:<local>`` for a fan-out key or a spawn id; ``local`` is checked."""
    # F-4, F-5, F-3
    return f"{parent_id}{CHILD_SEPARATOR}{validate_node_id(local)}"


def validate_flow_name(name: object) -> str:
    """Return ``name`` if it may name a flow, else raise InvalidRunIdError."""
    # F-6
    if not is_valid_name(name):
        raise InvalidRunIdError(
            f"invalid flow name: {quote(str(name))} (alphanumeric, hyphen and underscore only)"
        )
    assert isinstance(name, str)
    return name


def format_run_id(flow: str, local_id: str) -> str:
    """``<flow>:<localId>``."""
    # F-7
    if not is_valid_name(flow):
        raise InvalidRunIdError(f"invalid flow name: {quote(str(flow))}")
    if not is_valid_name(local_id):
        raise InvalidRunIdError(f"invalid localId: {quote(str(local_id))}")
    return f"{flow}:{local_id}"


def parse_run_id(run_id: str) -> ParsedRunId:
    """Split a run id at its first ``:``."""
    # F-7
    if not isinstance(run_id, str) or ":" not in run_id:
        raise InvalidRunIdError(f'missing ":": {quote(str(run_id))}')
    flow, _, local_id = run_id.partition(":")
    format_run_id(flow, local_id)
    return ParsedRunId(flow, local_id)


def subflow_run_id(child_flow: str, parent_run_id: str, node_id: str) -> str:
    """``<child flow>:<parent localId>-<node id>``; grandchildren keep appending."""
    # F-8
    parent_local = parse_run_id(parent_run_id).local_id
    return format_run_id(child_flow, f"{parent_local}-{node_id}")


def scheduled_run_id(flow: str, schedule: str, occurrence_ms: int) -> str:
    """``<flow>:<schedule name>-<occurrence ms>``."""
    # F-10, S-17
    return format_run_id(flow, f"{schedule}-{occurrence_ms}")
