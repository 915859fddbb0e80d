"""pytest plugin for runs inside Pyodide (harness/pyodide_pytest.mjs).

Async test functions run through ``pyodide.ffi.run_sync``. pytest-asyncio cannot work there: Pyodide's
WebLoop is always the running loop, so ``Runner.run`` refuses to start. With JSPI (node
--experimental-wasm-stack-switching) ``run_sync`` suspends the test on JS promises (D1, Queues).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pyodide.ffi import run_sync


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    run_sync(pyfuncitem.obj(**arguments))
    return True
