"""Every ``ShardRpc`` method reaches the shard through each stub and handle, so a new RPC is never missed.

The stubs are written against the protocol once: ``client.ShardHandle`` and the local
``SerialShardStub`` install a forwarder for each protocol method they do not write themselves (J-22).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

import tsumugi
from tsumugi.client import ShardHandle
from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.ports import RunRpc, ShardRpc, rpc_method_names
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators
from tsumugi.runtimes.local.shard_namespace import LocalShardNamespace, SerialShardStub
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

SHARD_RPCS = rpc_method_names(ShardRpc)
# Methods a handle or stub writes itself because it adds behaviour; the rest only forward.
WRITTEN = {
    ShardHandle: {"configure", "reschedule", "update_policy"},
    SerialShardStub: {"report"},
}


class RecordingShard:
    """Answers any RPC with its name and arguments."""

    def __init__(self, *_: object) -> None:
        self.calls: list[tuple[str, tuple[object, ...], dict[str, object]]] = []

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)

        async def call(*args: object, **kwargs: object) -> object:
            self.calls.append((method, args, kwargs))
            return {"method": method}

        return call


def test_the_protocol_names_every_shard_rpc() -> None:
    # J-22: the surface a Durable Object stub of a shard answers
    assert SHARD_RPCS == (
        "enqueue_many",
        "enqueue_outcomes",
        "report",
        "heartbeat",
        "claim",
        "expire",
        "retry",
        "cancel",
        "reschedule",
        "mutate_many",
        "configure",
        "update_policy",
        "reset_policy",
        "diagnostics",
        "state_of",
    )
    assert rpc_method_names(RunRpc) == ("notify",)


@pytest.mark.parametrize("stub_class", [ShardHandle, SerialShardStub, JobShard])
def test_every_shard_rpc_is_a_coroutine_method(stub_class: type) -> None:
    # J-22: the implementation and each stub answer the whole protocol
    for method in SHARD_RPCS:
        found = getattr(stub_class, method, None)
        assert inspect.iscoroutinefunction(found), f"{stub_class.__name__}.{method}"


@pytest.mark.parametrize("stub_class", [ShardHandle, SerialShardStub])
def test_a_written_method_keeps_the_protocol_parameters(stub_class: type) -> None:
    for method in WRITTEN[stub_class]:
        declared = list(inspect.signature(getattr(ShardRpc, method)).parameters)
        written = list(inspect.signature(getattr(stub_class, method)).parameters)
        assert written[: len(declared)] == declared, method


async def test_the_handle_forwards_each_call_unchanged_to_its_stub() -> None:
    stub = RecordingShard()
    handle = ShardHandle(stub, {})
    for method in set(SHARD_RPCS) - WRITTEN[ShardHandle]:
        assert await getattr(handle, method)("a", 1, key=None) == {"method": method}
        assert stub.calls[-1] == (method, ("a", 1), {"key": None})


async def test_the_local_stub_calls_the_shard_in_its_turn(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = closing(
        SerialCoordinators("shards", tmp_path / "shards", alarms, clock, RecordingShard, SqliteExecutor)
    )
    stub = LocalShardNamespace(coordinators).get("MAIL#0")
    shard = coordinators.coordinator("MAIL#0")
    for method in SHARD_RPCS:
        assert await getattr(stub, method)("a", 1) in ({"method": method}, None)
        assert shard.calls[-1][:2] == (method, ("a", 1))


def test_the_durable_object_answers_every_shard_rpc_in_the_protocol_order() -> None:
    # J-22: the Durable Object class is written by hand (RPC reaches only real methods) and its stubs
    # pass arguments by position in the protocol's order; it imports js, so its source is read instead.
    source = Path(tsumugi.__file__).parent / "runtimes" / "cloudflare" / "durable_objects.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    shard = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "TsumugiJobShard"
    )
    methods = {node.name: node for node in shard.body if isinstance(node, ast.AsyncFunctionDef)}
    for method in SHARD_RPCS:
        assert method in methods, f"TsumugiJobShard.{method}"
        declared = list(inspect.signature(getattr(ShardRpc, method)).parameters)
        written = [arg.arg for arg in methods[method].args.args]
        assert written == declared, method
