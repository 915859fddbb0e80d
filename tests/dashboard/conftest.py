"""Fixtures for the dashboard tests: Node tooling, Debian's Chromium driven by Playwright, and the
example app served by a real ``tsumugi dev`` on a free port with a temporary state directory.

Nothing here fakes the API. A missing tool (Node, Chromium, Playwright) skips the browser tests and
names it; a server that does not start, or that lacks the REST API or the dashboard route, fails them.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "dashboard"
SHOTS = REPO / "test-results" / "dashboard"
# PLATFORM.md §6: the flags Debian's Chromium needs here; never a downloaded browser.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "dashboard-test-token"
TOKEN_COOKIE = "tsumugi_token"
SERVER_START_TIMEOUT_S = 30.0
# CI shares two cores with the whole suite: every UI wait gets room beyond Playwright's 5 s default.
EXPECT_TIMEOUT_MS = 20_000
ACTION_TIMEOUT_MS = 30_000
NPM_CI_TIMEOUT_S = 240


@pytest.fixture(scope="session")
def npm() -> str:
    """npm with dashboard/node_modules installed from the lockfile, or a skip naming what is missing."""
    path = shutil.which("npm")
    if path is None or shutil.which("node") is None:
        pytest.skip("node/npm not found on PATH; the dashboard's JavaScript checks need Node >= 20.19")
    if not all((DASHBOARD / "node_modules" / ".bin" / tool).exists() for tool in ("vitest", "vue-tsc")):
        subprocess.run(
            [path, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=DASHBOARD,
            check=True,
            timeout=NPM_CI_TIMEOUT_S,
            capture_output=True,
        )
    return path


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium not found on PATH (apt-get install -y chromium)")
    return path


@pytest.fixture(scope="module")
def chromium(chromium_path: str) -> Iterator[Any]:
    """One headless Chromium per test module (module scope: Playwright's loop must be gone before
    the asyncio tests of other folders run)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    sync_api.expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@dataclass(frozen=True)
class DevServer:
    base_url: str
    token: str

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url, headers={"authorization": f"Bearer {self.token}"}, timeout=10.0
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_listening(process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-800:]
            pytest.fail(f"tsumugi dev exited with {process.returncode} before listening: {tail}")
        try:
            httpx.get(f"{base_url}/", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)  # a child process binding its socket; bounded above (noqa: sleep-ok)
    pytest.fail(f"tsumugi dev did not listen on {base_url} within {SERVER_START_TIMEOUT_S:.0f} s")


def _require_surface(server: DevServer) -> None:
    """Fails with the exact gap when the REST API or the dashboard is not served."""
    with server.api() as api:
        spec = api.get("/api/openapi.json")
        if spec.status_code != 200:
            pytest.fail(
                f"REST API not served by tsumugi dev: GET /api/openapi.json answered {spec.status_code}"
            )
        page = httpx.get(f"{server.base_url}/", timeout=5.0)
        if page.status_code != 200 or 'id="app"' not in page.text:
            pytest.fail(f"dashboard not served at / (A-17): GET / answered {page.status_code}")
        by_cookie = httpx.get(f"{server.base_url}/api/bindings", cookies={TOKEN_COOKIE: TOKEN}, timeout=5.0)
        if by_cookie.status_code == 401:
            pytest.fail(f"bearer auth does not read the {TOKEN_COOKIE} cookie (A-79, U-7)")


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """The example app (src/app.py) on ``tsumugi dev``, stopped by its process id afterwards."""
    exe = Path(sys.executable).with_name("tsumugi")
    if not exe.exists():
        pytest.skip(f"{exe} not found: the tsumugi command is not installed in this environment")
    workdir = tmp_path_factory.mktemp("dev")
    log = workdir / "dev.log"
    port = _free_port()
    env = {**os.environ, "TSUMUGI_TOKEN": TOKEN}
    command = [str(exe), "dev", "--host", "127.0.0.1", "--port", str(port), "--state-dir"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, str(workdir / "state")],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = DevServer(base_url=f"http://127.0.0.1:{port}", token=TOKEN)
    try:
        _wait_until_listening(process, server.base_url, log)
        _require_surface(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


Shot = Callable[[Any, str], Path]


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Shot:
    """Saves numbered screenshots under test-results/dashboard/<test name>/."""
    folder = SHOTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    taken: list[Path] = []

    def take(page: Any, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)  # test-results/ may be cleared meanwhile
        path = folder / f"{len(taken) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        taken.append(path)
        return path

    return take


@pytest.fixture
def dash(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    """A signed-in page on the dashboard, refreshing every second, at laptop size."""
    context = chromium.new_context(viewport={"width": 1366, "height": 860}, locale="en-US")
    context.add_cookies([{"name": TOKEN_COOKIE, "value": TOKEN, "url": dev_server.base_url}])
    context.add_init_script("localStorage.setItem('tsumugi:refresh', '1000')")
    page = context.new_page()
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    page.goto(dev_server.base_url + "/")
    yield page
    context.close()


class ApiHelper:
    """Sets up data through the real REST API (A-38) and waits for the read model to catch up."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def enqueue(self, binding: str, payload: Any, **options: Any) -> str:
        answer = self.client.post("/api/jobs", json={"binding": binding, "payload": payload, **options})
        assert answer.status_code == 201, answer.text
        job_id: str = answer.json()["id"]
        return job_id

    def job_state(self, job_id: str) -> str | None:
        answer = self.client.get(f"/api/jobs/{job_id.replace('#', '%23')}")
        return str(answer.json()["job"]["state"]) if answer.status_code == 200 else None

    def wait_job_state(self, job_id: str, states: set[str], timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        state = self.job_state(job_id)
        while state not in states and time.monotonic() < deadline:
            time.sleep(0.2)  # the read model lags the coordinator, A-41; bounded above (noqa: sleep-ok)
            state = self.job_state(job_id)
        assert state in states, f"{job_id} is {state}, expected one of {sorted(states)}"
        return str(state)


@pytest.fixture
def api(dev_server: DevServer) -> Iterator[ApiHelper]:
    with dev_server.api() as client:
        yield ApiHelper(client)
