"""One attempt's perform under its timer, and the report of a perform that returned."""
# J-74, J-119

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from types import CoroutineType

from tsumugi.core.json_types import JsonValue
from tsumugi.execution.attempt import AttemptTimer, cancellable, resume, spawn_wire
from tsumugi.execution.messages import SuccessReport
from tsumugi.performer import JobContext, Performs, SpawnRequest


async def perform(
    performer: Performs,
    payload: object,
    ctx: JobContext,
    new_timer: Callable[[], AttemptTimer] | None,
    *,
    cancel_on_timeout: bool = False,
) -> object:
    """Run ``performer.perform`` in the calling task, with a timer made by ``new_timer`` once it waits.

    A perform that settles without waiting makes no timer (ADR-0165). The timer does not stop the
    performer: when it fires, its callback reports the timeout and the caller discards what this later
    returns or raises. With ``cancel_on_timeout`` the coroutine runs in a task of its own, which the
    timer cancels (ADR-0141); this then returns None, discarded like any late outcome.
    """
    # J-74
    pending = performer.perform(payload, ctx)
    if not inspect.isawaitable(pending):
        return pending  # a synchronous perform (J-60) has already settled
    if new_timer is None:
        return await pending  # timeout_ms <= 0 disables the consumer-side timer (J-74)
    if cancel_on_timeout:
        return await cancellable(pending, new_timer())
    if type(pending) is CoroutineType:
        # ADR-0159: run the coroutine's first step here; one that finishes in it (most do) never arms the
        # timer. Its deadline is the attempt's, counted from before the call, as if armed before it.
        try:
            waits_on = pending.send(None)
        except StopIteration as done:
            return done.value
        timer = new_timer()
        timer.start(ctx.deadline_at)
        try:
            return await resume(pending, waits_on)
        finally:
            timer.cancel()
    timer = new_timer()
    timer.start()
    try:
        return await pending
    finally:
        timer.cancel()


def success_report(
    result: JsonValue,
    spawns: Sequence[SpawnRequest],
    attempt: int | None,
    spawn_defaults: Mapping[str, Mapping[str, object]] | None = None,
) -> SuccessReport:
    """``{ok: true, result, spawns?, attempt}``; spawns only when non-empty.

    A spawn's options are laid over its binding's class defaults (``spawn_defaults``, ADR-0141).
    """
    # J-119
    outcome: SuccessReport = {"ok": True, "result": result}
    if spawns:
        defaults = spawn_defaults or {}
        outcome["spawns"] = [spawn_wire(spawn, defaults.get(spawn.binding)) for spawn in spawns]
    if attempt is not None:
        outcome["attempt"] = attempt
    return outcome
