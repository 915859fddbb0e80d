"""What a scenario is given: the simulation's ``env``, the app on its clock, and enqueue helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tsumugi.application import Tsumugi
from tsumugi.testing.chaos.sim_clock import SimulatedClock

if TYPE_CHECKING:
    from tsumugi.testing.chaos.world import Simulation

__all__ = ["ChaosSession", "Scenario"]


class ChaosSession:
    """What the scenario gets: the runtime's ``env``, the app on the simulation's clock, and helpers."""

    def __init__(self, simulation: Simulation) -> None:
        self._sim = simulation

    @property
    def env(self) -> Any:
        return self._sim.runtime.env

    @property
    def tsumugi(self) -> Tsumugi:
        """The app, rebuilt from its definition around the simulation's clock and performers."""
        return self._sim.twin

    @property
    def clock(self) -> SimulatedClock:
        return self._sim.clock

    @property
    def bindings(self) -> Mapping[str, Any]:
        return self._sim.bindings

    async def enqueue(self, *target: Any, **options: Any) -> str:
        """``tsumugi.enqueue(env, ...)`` on the simulation, any of its forms; the id is then checked
        to be held by its shard (``lost``)."""
        enqueue: Any = self.tsumugi.enqueue  # every overload of it takes these arguments as given
        job_id: str = await enqueue(self.env, *target, **options)
        self._sim.enqueued.append(job_id)
        return job_id

    async def enqueue_many(self, inputs: Sequence[Mapping[str, Any]]) -> list[str]:
        job_ids = await self.tsumugi.enqueue_many(self.env, inputs)
        self._sim.enqueued.extend(job_ids)
        return job_ids

    async def start(self, flow: str, input: Any = None, id: str | None = None) -> str:
        """``tsumugi.start`` on the simulation; the run is checked to settle."""
        run_id = await self.tsumugi.start(self.env, flow, input, id)
        self._sim.started.append(run_id)
        return run_id


Scenario = Callable[[ChaosSession], Awaitable[None]]
