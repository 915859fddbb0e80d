"""Local ids made ahead stay in the process that made them (J-15; ADR-0107, ADR-0174).

Here, not under ``tests/unit``: that suite also runs inside Pyodide, which has no processes to fork.
"""

from __future__ import annotations

import os

import pytest

import tsumugi.core.wire_format as wire_format_module
from tsumugi.core.wire_format import new_local_id


def test_a_forked_child_never_hands_out_its_parents_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # J-15: ids are made ahead within one millisecond; a child forked then makes its own
    monkeypatch.setattr(wire_format_module.time, "time_ns", lambda: 1_700_000_000_000 * 1_000_000)
    new_local_id()  # the parent now holds ids made ahead for this millisecond
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        os.write(write, " ".join(new_local_id() for _ in range(40)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        theirs = set(pipe.read().split())
    ours = {new_local_id() for _ in range(40)}
    assert len(theirs) == len(ours) == 40
    assert not theirs & ours
