"""Read-model retention: the cron sweep of old terminal job rows."""
# J-172, D-9

from __future__ import annotations

import logging

from tsumugi.core.config import SweepOptions
from tsumugi.ports import SqlDatabase
from tsumugi.storage.read_model_writer import D1ReadModelWriter

__all__ = ["SweepOptions", "sweep_read_model"]

_log = logging.getLogger("tsumugi")


async def sweep_read_model(db: SqlDatabase, now_ms: int, options: SweepOptions | None = None) -> int:
    """Delete at most ``limit`` terminal rows with ``updated_at < now - older_than_ms``; active rows stay.

    The defaults (7 days, 1 000 rows) equal ``failed_retention_ms``, so "listed => retryable".
    Logs ``tsumugi: swept <n> jobs from the read model`` when n > 0. Runs are never swept.
    """
    # J-172, J-207, D-9
    opts = options or SweepOptions()
    swept = await D1ReadModelWriter(db).delete_terminal_jobs(now_ms - opts.older_than_ms, opts.limit)
    if swept > 0:
        _log.info("tsumugi: swept %d jobs from the read model", swept)
    return swept
