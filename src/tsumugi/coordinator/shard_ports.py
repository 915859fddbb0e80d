"""What a job shard calls beside its own storage: the metrics writer and a projection made elsewhere."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol

from tsumugi.storage.projection_outbox import ProjectedJobs


class MetricsWriter(Protocol):
    """Writes one metrics point per terminal snapshot after a projection.

    Should not raise; if it does, the tick logs ``tsumugi: writeMetrics failed`` and goes on.
    """

    # J-194, M-4

    async def write(self, snapshots: Sequence[Mapping[str, object]]) -> int: ...


class ShardProjection(Protocol):
    """A shard's projection made beside its coordinator, from the shard's committed rows.

    The local runtime's writer process reads the due jobs from the shard's file and upserts them into
    the read model there (ADR-0171); the coordinator only clears what was projected, as each answer
    comes, so that its ticks never wait for the read model. Where it cannot (no writer process could start),
    ``start`` answers None and the coordinator projects itself.
    """

    # J-192, J-194

    async def start(self, limit: int, changed_before_ms: int) -> asyncio.Future[ProjectedJobs] | None:
        """Begin reading up to ``limit`` due jobs as ``ProjectionOutbox.collect`` does, and upserting
        them; the future settles with what was written."""
        ...

    def write_points(self) -> None:
        """After the clear: write the metric points of the last projection. Never raises: a failure is
        logged where it happens."""
        # M-4
        ...
