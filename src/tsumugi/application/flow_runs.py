"""Starting and steering runs, reading schedules and priming the scheduler."""
# F-19, F-28, S-14, S-21

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Final, Protocol

from tsumugi.client import env_binding
from tsumugi.core.flow.ids import format_run_id, parse_run_id
from tsumugi.core.input_bounds import clamp_duration
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.wire_format import new_local_id
from tsumugi.errors import ConfigurationError, InvalidFlowError, UnknownMutationError

__all__ = [
    "NO_RUN_BINDING",
    "NO_SCHEDULER_BINDING",
    "SCHEDULER_NAME",
    "RunHandle",
    "SchedulePrimer",
    "control_run",
    "list_schedules",
    "run_for",
    "send_event",
    "start_run",
]

_log: Final = logging.getLogger("tsumugi")

NO_RUN_BINDING: Final = "RUN binding is not configured, add the Run DO binding to wrangler"  # F-19
NO_SCHEDULER_BINDING: Final = "SCHEDULER binding is not configured, add the Scheduler DO binding to wrangler"
SCHEDULER_NAME: Final = "scheduler"  # S-12: the one Scheduler instance's fixed name
RUN_ACTIONS: Final = frozenset({"cancel", "retry"})


class RunHandle(Protocol):
    """One run's coordinator, as ``env.RUN`` hands it out: in process locally, a Durable Object stub on
    Workers. Its answers are mappings locally and JS objects on Workers, so they are read defensively."""

    async def start(self, flow: str, input: object, deadline_ms: int | None = None) -> object: ...

    async def state(self) -> str | None: ...

    async def cancel(self) -> object: ...

    async def retry(self) -> object: ...

    async def send_event(self, event: str, payload: object = None) -> object: ...


class _Runs(Protocol):
    """``env.RUN``."""

    def get(self, run_id: str) -> RunHandle: ...


class _SchedulerHandle(Protocol):
    async def list(self) -> Iterable[JsonMapping]: ...

    async def sync(self) -> None: ...


class _Schedulers(Protocol):
    """``env.SCHEDULER``."""

    def get(self, name: str) -> _SchedulerHandle: ...


def run_for(env: object, run_id: str) -> RunHandle:
    """The run coordinator's handle for ``run_id``; raises when ``RUN`` is not bound."""
    # F-19
    runs: _Runs | None = env_binding(env, "RUN")
    if runs is None:
        raise ConfigurationError(NO_RUN_BINDING)
    return runs.get(run_id)


async def start_run(
    env: object,
    flows: Collection[str],
    flow: str,
    input: object,
    local_id: str | None = None,
    deadline_ms: int | None = None,
) -> str:
    """Start a run, after the caller's configuration check: the run id, once the run exists.

    The same ``local_id`` names the same coordinator, whose atomic start makes this idempotent.
    """
    if flow not in flows:
        raise InvalidFlowError(f"flow is not registered: {flow}")
    run_id = format_run_id(flow, new_local_id() if local_id is None else local_id)
    if deadline_ms is not None:
        deadline_ms = int(clamp_duration(deadline_ms))  # ADR-0133: now + the deadline stays an instant
    await run_for(env, run_id).start(flow, input, deadline_ms)
    return run_id


async def control_run(env: object, run_id: str, action: str) -> JsonObject:
    """``cancel`` or ``retry`` on the run; ``{ok}`` or ``{ok: False, reason}``."""
    # F-69, F-77, F-28
    if action not in RUN_ACTIONS:
        raise UnknownMutationError(f"unknown run action: {action}")
    stub = run_for(env, run_id)
    result = await (stub.cancel() if action == "cancel" else stub.retry())
    return dict(result) if isinstance(result, Mapping) else {"ok": bool(getattr(result, "ok", False))}


async def send_event(env: object, run_id: str, event: str, payload: object = None) -> JsonObject:
    """Send ``event`` to the run; ``payload`` becomes the result of the node that waits for it.

    Returns ``{"ok": True, "node": ..., "state": "COMPLETED"}`` when the waiting node took it, or
    ``"state": "PENDING"`` when the node has not started waiting yet and the event is kept for it.
    Otherwise ``{"ok": False, "reason": ...}`` with reason ``already-satisfied`` (the node had its
    event; this one is not applied), ``unknown-event`` (no node of the run waits for it),
    ``invalid-state`` (the run or the node no longer waits), ``invalid-payload`` or ``gone``.
    """
    parse_run_id(run_id)
    result = await run_for(env, run_id).send_event(event, payload)
    return dict(result) if isinstance(result, Mapping) else {"ok": False, "reason": "gone"}


async def list_schedules(env: object) -> list[JsonObject]:
    """every schedule as the Scheduler stores it, no read-model lag."""
    # S-21
    scheduler: _Schedulers | None = env_binding(env, "SCHEDULER")
    if scheduler is None:
        raise ConfigurationError(NO_SCHEDULER_BINDING)
    return [dict(item) for item in await scheduler.get(SCHEDULER_NAME).list()]


class SchedulePrimer:
    """the first event a process handles starts one background ``sync()``; a failure is forgotten.

    Only an app with schedules has one, so an app without them makes no call per event.
    """

    # S-14

    def __init__(self) -> None:
        self._task: asyncio.Future[None] | None = None

    def prime(self, env: object, ctx: object = None) -> None:
        """Start the sync unless one ran or runs; never awaited by the event that triggered it."""
        if self._task is not None:
            return
        scheduler: _Schedulers | None = env_binding(env, "SCHEDULER")
        if scheduler is None:
            return
        self._task = asyncio.ensure_future(self._sync(scheduler))
        # A Python ctx spells it wait_until; a Workers ctx (a JS object) spells it waitUntil.
        wait_until = getattr(ctx, "wait_until", None) or getattr(ctx, "waitUntil", None)
        if callable(wait_until):
            wait_until(self._task)  # keeps the isolate (or the local runtime's shutdown) waiting for it

    async def _sync(self, scheduler: _Schedulers) -> None:
        try:
            await scheduler.get(SCHEDULER_NAME).sync()
        except Exception:
            _log.exception("tsumugi: scheduler sync failed; the next event tries again")
            self._task = None
