"""``tsumugi dev``'s server: the local runtime and uvicorn in one process, stopped cleanly by a signal."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from tsumugi.errors import LocalRuntimeError, PortInUseError
from tsumugi.runtimes.local.app_loader import LoadedApp
from tsumugi.runtimes.local.dev_vars import TOKEN_VAR
from tsumugi.runtimes.local.http_app import build_http_app
from tsumugi.runtimes.local.queue_consumer import DEFAULT_BATCH_SIZE
from tsumugi.runtimes.local.runtime import LocalRuntime

log = logging.getLogger("tsumugi.local")


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to ``serve_dev`` (which must stop the runtime afterwards)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind the listening socket up front, so a taken port is a clear error before anything starts."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise LocalRuntimeError(f"cannot resolve the host {host!r}: {error.strerror}") from error
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise PortInUseError(
                f"port {port} on {host} is already in use (choose another with --port)"
            ) from error
        raise LocalRuntimeError(f"cannot listen on {host}:{port}: {error.strerror or error}") from error
    sock.listen(128)  # uvicorn's default backlog is 2048; 128 is plenty for one developer
    sock.setblocking(False)
    return sock


async def serve_dev(
    loaded: LoadedApp,
    state_dir: Path,
    *,
    host: str,
    port: int,
    vars: dict[str, str],
    batch_size: int | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM, then stop HTTP, let attempts finish, and close the state files."""
    sock = bind_socket(host, port)
    runtime = LocalRuntime(
        loaded.tsumugi,
        state_dir,
        vars=vars,
        exports=loaded.exports,
        batch_size=batch_size or DEFAULT_BATCH_SIZE,
    )
    try:
        await runtime.start()
    except BaseException:
        sock.close()
        raise
    server = _Server(
        uvicorn.Config(
            build_http_app(loaded, runtime.env), lifespan="off", access_log=False, log_level="warning"
        )
    )
    loop = asyncio.get_running_loop()

    def request_exit() -> None:
        if server.should_exit:
            server.force_exit = True  # a second signal: stop waiting for open connections
        server.should_exit = True

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, request_exit)
    print(f"tsumugi dev: {loaded.spec} on http://{host}:{port} (state in {state_dir})", flush=True)
    if getattr(loaded.tsumugi, "auth", False) is None:
        # ADR-0145: fail-closed (J-9), and said once where the developer looks
        print(
            "tsumugi dev: the app defines no auth, so the API and dashboard answer 404;"
            " pass auth=bearer_auth(...) to define_tsumugi",
            flush=True,
        )
    elif not vars.get(TOKEN_VAR):
        # J-9: authentication is fail-closed, so without a token every protected route answers 404
        print(
            f"tsumugi dev: no {TOKEN_VAR} (set it or put it in .dev.vars), the API stays closed", flush=True
        )
    try:
        await server.serve(sockets=[sock])
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await runtime.stop()
        sock.close()
        print("tsumugi dev: stopped", flush=True)
