"""A run coordinator's context: its row, nodes, outbox and waits, over ``CoordinatorContext``.

Apart from ``context`` so that a process that only runs jobs never imports a run's storage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

from tsumugi.clock import Clock
from tsumugi.coordinator.context import CoordinatorContext
from tsumugi.coordinator.run_ports import RunPeers, RunProjection, RunProjectionBeside
from tsumugi.core.config import RunSettings
from tsumugi.core.flow.model import Flow
from tsumugi.core.json_types import JsonMapping
from tsumugi.ports import AlarmPort, ShardNamespace, SqlExecutor
from tsumugi.storage.run_outbox import RunOutbox, run_snapshot
from tsumugi.storage.run_schema import ensure_run_schema
from tsumugi.storage.run_store import RunStore
from tsumugi.storage.run_waits import RunWaitStore


class RunContext(CoordinatorContext):
    """One run's state: its row, nodes, outbox and waits, and the coordinators it calls."""

    tick_log: ClassVar[logging.Logger] = logging.getLogger("tsumugi.run")

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
        settings: RunSettings | None,
        shards_of: Mapping[str, int] | None,
        new_id: Callable[[], str],
        storage_exists: Callable[[], bool] | None,
        binding_settings: Callable[[str], JsonMapping] | None,
        projection: RunProjectionBeside | None = None,
    ) -> None:
        super().__init__(name, sql, clock=clock, alarm=alarm)
        self.projection = projection
        self.shards = shards
        self.runs = runs
        self.read_model = read_model
        self.flows = flows
        self.settings = settings or RunSettings()
        self.shards_of = shards_of or {}
        self.binding_settings = binding_settings
        self.new_id = new_id
        self.store = RunStore(sql)
        self.outbox = RunOutbox(sql)
        self.waits = RunWaitStore(sql)
        self._storage_exists = storage_exists
        self._schema_ready = False
        self.has_storage()

    def forget(self) -> None:
        """Drop the in-memory progress: after a rollback or a failed tick, storage is the truth (ADR-0115)."""
        self.store.forget()
        self.outbox.forget()

    def has_storage(self) -> bool:
        """Prepare the schema when there is storage; False means no run was ever created."""
        # F-28
        if not self._schema_ready and (self._storage_exists is None or self._storage_exists()):
            self.ensure_schema()
        return self._schema_ready

    def ensure_schema(self) -> None:
        if not self._schema_ready:
            ensure_run_schema(self.sql)
            self._schema_ready = True

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

    def snapshot_run(self) -> None:
        run = self.store.run()
        if run is not None:
            self.outbox.append_run(run.id, run_snapshot(run, self.store.counters()))

    def record_changes(self, node_ids: Iterable[str] = ()) -> None:
        """Queue the changed nodes, then the run's snapshot, for projection.

        Nodes first: the run's snapshot comes after them in the outbox, so a reader that sees its
        counters move sees those nodes moved too (ADR-0168).
        """
        self.outbox.mark_nodes(node_ids)
        self.snapshot_run()
