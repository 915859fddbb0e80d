"""What a run coordinator calls on other runs and on the read model.

``ports.RunRpc`` only names ``notify``; a run also starts, cancels, resumes and answers its child runs.
These protocols describe that full surface until ``ports.py`` carries it.
"""
# F-28, F-61, F-63, F-84

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from tsumugi.core.json_types import JsonObject


class RunPeer(Protocol):
    """Another run coordinator, reached through ``env.RUN``."""

    # F-28

    async def start(
        self,
        flow: str,
        input: object,
        deadline_ms: int | None = None,
        parent: Mapping[str, str] | None = None,
        depth: int = 0,
    ) -> JsonObject: ...

    async def notify(self, events: Sequence[Mapping[str, object]]) -> None: ...

    async def notify_child(self, node_id: str, child_run_id: str, state: str) -> None: ...

    async def cancel(self) -> JsonObject: ...

    async def retry(self) -> JsonObject: ...

    async def state(self) -> str | None: ...

    async def send_event(self, event: str, payload: object = None) -> JsonObject: ...


class RunPeers(Protocol):
    """``env.RUN``: the coordinator of a run id."""

    def get(self, run_id: str) -> RunPeer: ...


class RunProjection(Protocol):
    """Where run and node snapshots go; each snapshot carries its outbox ``seq``."""

    # F-84

    async def upsert_runs(self, snapshots: Sequence[Mapping[str, object]]) -> None: ...

    async def upsert_run_nodes(self, snapshots: Sequence[Mapping[str, object]]) -> None: ...


class RunProjectionBeside(Protocol):
    """A run's projection made beside its coordinator, from the run's committed rows.

    The local runtime's writer process reads the outbox rows the tick took, and their nodes, from the
    run's file and upserts them there (ADR-0179); the tick awaits it, then deletes those rows, as after
    its own upserts.
    """

    # F-35 step 7, F-84

    async def project(self, last_seq: int) -> bool:
        """Project the outbox rows up to ``last_seq``; False when it cannot be done here (no writer
        process could start), and the run projects them itself."""
        ...
