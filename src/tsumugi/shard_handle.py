"""ShardHandle: the stub ``shard_for`` answers, whose policy calls also take config objects and snake_case.

The shard's RPC surface is declared once, by ``ports.ShardRpc``: the handle writes only the methods that
add behaviour and forwards every other one to its stub unchanged.
"""
# J-175, J-203a

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Final, overload

from tsumugi.core.config import Policy, binding_config_from
from tsumugi.core.config_checks import camel_case, from_mapping, is_number
from tsumugi.core.input_bounds import clamp_duration, clamp_instant, clamp_safe
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.errors import InvalidConfigError
from tsumugi.ports import ShardRpc, rpc_method_names

__all__ = ["ShardHandle"]

_SETTINGS_FIELDS: Final = ("policy", "sweep_after_ms", "failed_retention_ms")


@overload
def _bounded(value: None, clamp: Callable[[float], float]) -> None: ...
@overload
def _bounded(value: int, clamp: Callable[[float], float]) -> int: ...
@overload
def _bounded(value: float, clamp: Callable[[float], float]) -> float: ...
def _bounded(value: float | None, clamp: Callable[[float], float]) -> float | None:
    """A finite number clamped (an int stays an int: the bounds are ints); anything else passes as is."""
    # The shard judges a value that is not a number.
    return clamp(value) if value is not None and is_number(value) else value


# mypy sees every ShardRpc method, typed by the protocol; as it cannot see the installed forwarders it
# calls the class abstract, so a construction says ``type: ignore[abstract]`` and
# tests/local/test_shard_rpc_surface.py checks that every method is there.
if TYPE_CHECKING:
    _ShardSurface = ShardRpc
else:
    _ShardSurface = object  # at run time the methods come from _forward_to_stub, installed below


class ShardHandle(_ShardSurface):
    """A shard stub whose ``configure`` also takes config objects and snake_case fields.

    Only the methods that add behaviour are written here; every other ``ShardRpc`` method is forwarded
    to ``stub`` unchanged (installed from the protocol below the class).
    """

    # J-175

    __slots__ = ("_extra", "_static", "stub")

    def __init__(
        self, stub: ShardRpc, extra_settings: JsonMapping, static: JsonMapping | None = None
    ) -> None:
        self.stub = stub
        self._extra = extra_settings
        self._static = static  # the binding's settings as enqueues carry them (J-50)

    async def configure(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        policy: Policy | Mapping[str, object] | None = None,
        sweep_after_ms: int | None = None,
        failed_retention_ms: int | None = None,
    ) -> JsonObject:
        """Replace and pin this shard's settings; omitted fields revert to defaults."""
        # J-51, J-175
        fields = from_mapping("configure", settings or {}, _SETTINGS_FIELDS)
        given = {
            "policy": policy,
            "sweep_after_ms": sweep_after_ms,
            "failed_retention_ms": failed_retention_ms,
        }
        fields.update({name: value for name, value in given.items() if value is not None})
        config = binding_config_from(fields)
        if config.policy is not None and config.policy.has_override_functions:
            raise InvalidConfigError(
                "configure takes per-key overrides as mappings, not functions (ADR-0056)"
            )
        # ADR-0059: pinned settings replace the enqueue-carried ones, so they keep the notice targets.
        return await self.stub.configure({**config.settings_wire(), **self._extra})

    async def reschedule(
        self,
        job_id: str,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: float | None = None,
    ) -> JsonObject:
        """Move a SCHEDULED job; numbers are clamped to what the shard stores (ADR-0133)."""
        # J-133
        return await self.stub.reschedule(
            job_id,
            _bounded(run_at, clamp_instant),
            _bounded(delay_ms, clamp_duration),
            _bounded(priority, clamp_safe),
        )

    async def update_policy(
        self, patch: Mapping[str, object], settings: JsonMapping | None = None
    ) -> JsonObject:
        """Change only the given policy fields and pin; a bad value raises and changes nothing.

        ``patch`` takes snake_case or camelCase fields; None reverts a field to its default. A shard
        not yet pinned merges onto ``settings``, by default this client's config of the binding
        (ADR-0131: before its first enqueue a shard knows only the defaults).
        """
        # J-176
        given = from_mapping("update_policy", patch, Policy.__dataclass_fields__)
        checked = Policy(**{name: value for name, value in given.items() if value is not None})
        if checked.has_override_functions:
            raise InvalidConfigError("update_policy takes per-key overrides as mappings, not functions")
        full = checked.to_wire()
        wire = {
            camel_case(name): None if value is None else full.get(camel_case(name))
            for name, value in given.items()
        }
        return await self.stub.update_policy(wire, settings if settings is not None else self._static)


def _forward_to_stub(method: str) -> Callable[..., Coroutine[object, object, object]]:
    async def forward(self: ShardHandle, *args: object, **kwargs: object) -> object:
        return await getattr(self.stub, method)(*args, **kwargs)

    return functools.update_wrapper(forward, getattr(ShardRpc, method))  # its name, doc and signature


for _method in rpc_method_names(ShardRpc):
    if _method not in vars(ShardHandle):
        setattr(ShardHandle, _method, _forward_to_stub(_method))
