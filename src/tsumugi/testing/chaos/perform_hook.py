"""The performer's side of the seams: ``perform`` hooked where the app's resolver hands it over."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from tsumugi.client import env_binding
from tsumugi.execution.attempt import HEARTBEAT_MIN_INTERVAL_MS
from tsumugi.performer import JobContext, has_perform
from tsumugi.ports import PerformerResolver
from tsumugi.testing.chaos.injector import Injector
from tsumugi.testing.chaos.sim_clock import SimulatedClock

__all__ = ["ChaosPerform", "ChaosResolver"]


class ChaosResolver:
    """The app's performer resolver, with each performer's ``perform`` going through ``ChaosPerform``.

    A performer the resolver built for this batch (a class entry) gets the hook on the instance,
    so the consumer still sees its class (payload types, options); a shared object from ``env`` (a
    service binding, a remote performer served here) is wrapped instead of changed.
    """

    # J-60

    def __init__(self, inner: PerformerResolver, injector: Injector, clock: SimulatedClock, generation: int):
        self._inner = inner
        self._injector = injector
        self._clock = clock
        self._generation = generation

    def resolve(self, binding: str, env: object) -> object | None:
        found = self._inner.resolve(binding, env)
        if not has_perform(found):
            return found
        hooked = ChaosPerform(found.perform, self._injector, self._clock, self._generation)
        if found is not env_binding(env, binding):
            try:
                setattr(found, "perform", hooked)  # noqa: B010  # an instance attribute over the method
                return found
            except AttributeError:
                pass  # slots or a frozen object: wrap it after all
        return _Wrapped(found, hooked)


class _Wrapped:
    """A shared performer object seen through a ``ChaosPerform``; anything else is the object's."""

    def __init__(self, inner: object, perform: ChaosPerform) -> None:
        self._inner = inner
        self.perform = perform

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


class ChaosPerform:
    """A performer's ``perform`` whose attempts can crash before they start, overrun, or go silent."""

    def __init__(
        self, perform: Callable[..., object], injector: Injector, clock: SimulatedClock, generation: int
    ) -> None:
        self._perform = perform
        self._asynchronous = inspect.iscoroutinefunction(perform)  # only these can time out (J-74)
        self._injector = injector
        self._clock = clock
        self._generation = generation

    async def __call__(self, payload: object, ctx: JobContext) -> object:
        injector = self._injector
        if not injector.alive(self._generation):
            await injector.hang()
        fired = injector.hit("perform", ctx.job_id)
        if "crash_before_perform" in fired:
            injector.crash(f"crash between claim and perform of {ctx.job_id}")
            await injector.hang()
        record = injector.started(ctx.job_id, ctx.attempt)
        try:
            if "heartbeat_stop" in fired and self._asynchronous:
                await self._work_long_while_silenced(ctx)
            result = self._perform(payload, ctx)
            if inspect.isawaitable(result):
                result = await result
            if "timeout" in fired and self._asynchronous:
                await self._clock.sleep_until(ctx.deadline_at + 1)  # the answer comes after the timer fired
        except Exception:
            record.end = "raised"
            raise
        record.end = "returned"
        if not injector.alive(self._generation):
            await injector.hang()  # the process died meanwhile: this answer never leaves it
        return result

    async def _work_long_while_silenced(self, ctx: JobContext) -> None:
        """Work for twice the timeout, beating as a long job should; only the first beat gets through."""
        clock, timeout_ms = self._clock, ctx.deadline_at - self._clock.now()
        if timeout_ms <= 0:
            return  # no consumer-side timer to outlive (J-74)
        await ctx.heartbeat()
        self._injector.silence(ctx.job_id, ctx.attempt)
        try:
            until = clock.now() + 2 * timeout_ms
            interval_ms = max(HEARTBEAT_MIN_INTERVAL_MS, timeout_ms // 2)  # J-64's throttle
            while clock.now() < until:
                await clock.sleep_until(min(until, clock.now() + interval_ms))
                await ctx.heartbeat()
        finally:
            self._injector.unsilence(ctx.job_id, ctx.attempt)
