"""``tsumugi.jobs(env)``: the positional enqueue form, typed like ``tsumugi.enqueue`` (ADR-0140)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, overload

from typing_extensions import Unpack

from tsumugi.core.options import EnqueueOptions
from tsumugi.performer import Performer

if TYPE_CHECKING:
    from tsumugi.application.tsumugi import Tsumugi

__all__ = ["BoundJobs", "MappingPayloadT", "PayloadT", "ResultT"]

PayloadT = TypeVar("PayloadT")
ResultT = TypeVar("ResultT")  # only to accept every performer: enqueue returns the job id, not the result
# ADR-0140: a dict literal for a TypedDict payload is checked at run time (mypy infers PayloadT from it).
MappingPayloadT = TypeVar("MappingPayloadT", bound=Mapping[str, object])


class BoundJobs:
    """``tsumugi.jobs(env)``: the positional enqueue form."""

    __slots__ = ("_env", "_tsumugi")

    def __init__(self, tsumugi: Tsumugi, env: object) -> None:
        self._tsumugi = tsumugi
        self._env = env

    @overload
    async def enqueue(
        self,
        binding: type[Performer[PayloadT, ResultT]],
        payload: PayloadT,
        /,
        **options: Unpack[EnqueueOptions],
    ) -> str: ...

    @overload
    async def enqueue(
        self,
        binding: type[Performer[MappingPayloadT, ResultT]],
        payload: Mapping[str, object],
        /,
        **options: Unpack[EnqueueOptions],
    ) -> str: ...

    @overload
    async def enqueue(self, binding: str, payload: object, /, **options: Unpack[EnqueueOptions]) -> str: ...

    async def enqueue(
        self, binding: type[Performer] | str, payload: object, /, **options: Unpack[EnqueueOptions]
    ) -> str:
        """``jobs(env).enqueue(SendMail, MailIn(...), **options)``, or with the binding's name."""
        if isinstance(binding, type):
            return await self._tsumugi.enqueue(self._env, binding, payload, **options)
        return await self._tsumugi.enqueue(self._env, binding=binding, payload=payload, **options)

    async def enqueue_many(self, inputs: Sequence[Mapping[str, object]]) -> list[str]:
        return await self._tsumugi.enqueue_many(self._env, inputs)
