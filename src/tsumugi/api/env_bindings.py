"""The env bindings through which a runtime tells the REST app what it offers, by name alone.

A runtime binds these without loading the REST app's modules: a worker that serves no HTTP starts
without them.
"""

from __future__ import annotations

from typing import Final

# ADR-0139: the env binding through which a runtime offers ``RuntimeGauges``; only the local runtime binds it.
RUNTIME_GAUGES_BINDING: Final = "TSUMUGI_PROMETHEUS"
# ADR-0145: a runtime that binds this to True (the local one) has an app without auth say why it is closed.
EXPLAIN_CLOSED_BINDING: Final = "TSUMUGI_EXPLAIN_CLOSED"
