"""Spawned children of a node, inserted before its parent settles."""
# F-55..F-57

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tsumugi.coordinator.run_decisions import dynamic_row
from tsumugi.core.flow.building import spawn_options
from tsumugi.core.flow.ids import child_node_id
from tsumugi.errors import TsumugiError
from tsumugi.storage.run_store import RunStore


def insert_spawns(
    store: RunStore, max_nodes: int, parent: str, spawns: Sequence[object], now: int
) -> set[str] | str:
    """Insert spawned children first, so nobody sees the parent settled without them."""
    # F-56
    if store.node_count() + len(spawns) > max_nodes:
        return f"node count exceeded the limit: {max_nodes}"
    seq = store.next_seq()
    rows = []
    try:
        for i, spawn in enumerate(spawns):
            rows.append(
                dynamic_row(
                    child_node_id(parent, _field(spawn, "id")),
                    str(_field(spawn, "binding")),
                    parent,
                    "spawn",
                    _field(spawn, "payload"),
                    spawn_options(_options(_field(spawn, "options"))),
                    seq + i,
                    now,
                )
            )
    except TsumugiError as exc:  # F-57 (port): a bad spawn id fails its parent, never the batch
        return str(exc)
    return set(store.insert_nodes(rows))


def _field(spawn: object, name: str) -> object:
    """A spawn request arrives as a wire dict, or as ``performer.SpawnRequest`` in-process."""
    return spawn.get(name) if isinstance(spawn, Mapping) else getattr(spawn, name, None)


def _options(value: object) -> Mapping[str, object] | None:
    return value if isinstance(value, Mapping) else None
