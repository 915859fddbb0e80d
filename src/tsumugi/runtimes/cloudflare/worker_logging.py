"""Tsumugi's logs in a Worker: INFO and above from the ``tsumugi`` loggers reach the Workers console.

Nothing configures Python's ``logging`` inside workerd, so without a handler only warnings would be
printed (the last-resort handler) and the engine's INFO lines (a sweep's count, a performer's log) would be
lost. Under Pyodide the package installs one stdout handler on the ``tsumugi`` logger when it has none;
stdout is ``console.log``, which Workers Logs and ``wrangler tail`` collect.
"""

from __future__ import annotations

import logging
import sys

from tsumugi.runtimes.cloudflare.js_conversion import IN_PYODIDE

FORMAT = "%(levelname)s %(name)s: %(message)s"


def configure_worker_logging(logger: logging.Logger | None = None) -> None:
    """Send INFO and above of ``tsumugi.*`` to stdout, once, when running in a Worker."""
    target = logger or logging.getLogger("tsumugi")
    if not IN_PYODIDE or target.handlers:
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(FORMAT))
    target.addHandler(handler)
    target.setLevel(logging.INFO)
    target.propagate = False  # the root logger has no handler here; this one is the Worker's output
