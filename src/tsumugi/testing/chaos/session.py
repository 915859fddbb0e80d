"""What a scenario is given: the simulation's ``env``, the app on its clock, and enqueue helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from tsumugi.application import Tsumugi
from tsumugi.runtimes.local.local_env import LocalEnv
from tsumugi.testing.chaos.sim_clock import SimulatedClock

if TYPE_CHECKING:
    from tsumugi.testing.chaos.world import Simulation

__all__ = ["ChaosSession", "Scenario"]


class ChaosSession:
    """What the scenario gets: the runtime's ``env``, the app on the simulation's clock, and helpers."""

    def __init__(self, simulation: Simulation) -> None:
        self._sim = simulation

    @property
    def env(self) -> LocalEnv:
        return self._sim.runtime.env

    @property
    def tsumugi(self) -> Tsumugi:
        """The app, rebuilt from its definition around the simulation's clock and performers."""
        return self._sim.twin

    @property
    def clock(self) -> SimulatedClock:
        return self._sim.clock

    @property
    def bindings(self) -> Mapping[str, object]:
        return self._sim.bindings

    async def enqueue(self, *target: object, **options: object) -> str:
        """``tsumugi.enqueue(env, ...)`` on the simulation, any of its forms; then checked to be held.

        The id is then checked to be held by its shard (``lost``).
        """
        # Every overload of it takes these arguments as given; it checks them itself.
        enqueue: Callable[..., Awaitable[str]] = self.tsumugi.enqueue
        job_id: str = await enqueue(self.env, *target, **options)
        self._sim.enqueued.append(job_id)
        return job_id

    async def enqueue_many(self, inputs: Sequence[Mapping[str, object]]) -> list[str]:
        job_ids = await self.tsumugi.enqueue_many(self.env, inputs)
        self._sim.enqueued.extend(job_ids)
        return job_ids

    async def start(self, flow: str, input: object = None, id: str | None = None) -> str:
        """``tsumugi.start`` on the simulation; the run is checked to settle."""
        run_id = await self.tsumugi.start(self.env, flow, input, id)
        self._sim.started.append(run_id)
        return run_id


Scenario = Callable[[ChaosSession], Awaitable[None]]
