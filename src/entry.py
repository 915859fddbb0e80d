"""The Worker entry (wrangler.jsonc ``main``): the example app of ``src/app.py`` served on Cloudflare.

Wrangler cannot see Python exports, so ``tests/platform/test_wrangler_project.py`` checks that every
Durable Object ``class_name`` of wrangler.jsonc is bound here (ADR-0081).
"""

import app as example
from tsumugi.runtimes.cloudflare import TsumugiJobShard, WorkerHandlers

__all__ = ["Default", "TsumugiJobShard", "TsumugiRun", "TsumugiScheduler"]


class TsumugiRun(example.tsumugi.run_class):  # type: ignore[misc, name-defined]
    """``RUN``: one flow run's coordinator, over the app's flow definitions."""

    # F-28, J-203


class TsumugiScheduler(example.tsumugi.scheduler_class):  # type: ignore[misc, name-defined]
    """``SCHEDULER``: the app's cron schedules (S-rules)."""


class Default(WorkerHandlers):
    """The default export: fetch (REST API + dashboard), queue (the consumer), scheduled (retention)."""

    app = example.tsumugi
    routes = staticmethod(example.http_routes)
