"""Session fixtures of the platform proofs: the Miniflare replay server, started once and always stopped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.platform.node_tooling import node_or_skip
from tests.platform.replay_client import ReplayServer


@pytest.fixture(scope="session")
def replay_server() -> Iterator[ReplayServer]:
    """Real Durable Object SQLite, D1 and Queues in Miniflare, reachable over 127.0.0.1."""
    server = ReplayServer(node_or_skip())
    try:
        yield server
    finally:
        server.close()
