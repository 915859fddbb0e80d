"""Extracting the code samples of a Markdown page and running them as a reader would, in order.

The convention every page of ``docs/guide/`` (and the README's first-job section) follows:

* A page is one session. Its blocks run top to bottom in one fresh directory, as a reader who copies them
  into one project directory would run them. Nothing is shared between pages.
* ```` ```python title="app.py" ```` writes the block to that file (a path relative to the page's
  directory), so later blocks import it (``from app import tsumugi``). The file is then run once with
  ``python app.py`` to prove it loads; a file named ``test_*.py`` is run with ``python -m pytest`` instead.
* ```` ```python ```` without a title is a script: it runs with ``python`` in the page's directory and must
  exit 0. Samples assert what they show, so a sample whose claim stops being true fails.
* ```` ```sh ```` (or ``bash``/``shell``) blocks are checked, not run: every command must exist (a ``tsumugi``
  subcommand and each ``--option`` it is given, a ``scripts/`` file of this repository, a known ``wrangler``
  subcommand, a ``curl`` path and method of the OpenAPI document). Two comments on the line before a
  block change that:

  - ``<!-- sample: run -->`` also runs the block with ``bash -e`` in the page's directory (exit 0).
  - ``<!-- sample: serve -->`` starts the block's one command in the background, waits until it listens,
    and stops it (SIGINT) when the page is done: this is how ``tsumugi dev`` samples are run.

  A page that serves replaces the port ``8787`` in every block with a free port (and gives a served
  ``tsumugi dev`` without ``--port`` that port), so pages run beside a developer's own ``tsumugi dev``.
* ``<!-- sample: worker -->`` before a python block marks code that only loads inside a Python Worker
  (it imports the Workers SDK): it is compiled, written to its ``title`` file, and every name it imports
  from ``tsumugi`` must exist in the module it names. The Worker itself is tested in ``tests/workerd/``.
* ``json``, ``jsonc``, ``toml`` and ``yaml`` blocks must parse; ``text`` blocks (output, trees) are prose.
  Any other language is an error, so a new kind of block needs a decision here first.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import json5
import yaml

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "guide"
DEFAULT_PORT = "8787"  # the port the pages name; a served page swaps it for a free one
SCRIPT_TIMEOUT_S = 120.0  # a sample runs a short job on the local runtime: seconds, not minutes
SERVE_DEADLINE_S = 30.0  # `tsumugi dev` listens within a second or two; this is the give-up bound
STOP_GRACE_S = 10.0  # tsumugi dev stops on SIGINT within its 5 s shutdown grace

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"^<!--\s*sample:\s*(?P<name>[a-z-]+)\s*-->$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
PYTHON = {"python", "py"}
SHELL = {"sh", "bash", "shell"}
PARSED = {"json", "jsonc", "toml", "yaml", "yml"}
PROSE = {"text", "txt"}
WRANGLER_COMMANDS = frozenset(
    {"deploy", "dev", "d1", "queues", "secret", "login", "tail", "types", "versions"}
)
PYWRANGLER_COMMANDS = frozenset({"sync", "dev", "deploy"})
# Programs a shell sample may call without a check of their own: the reader's standard tools.
PLAIN_PROGRAMS = frozenset(
    {"cd", "mkdir", "cat", "echo", "export", "source", "git", "python", "python3", "pip", "ls", "open"}
)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts (1-based line), its language, title and directive."""

    page: Path
    line: int
    lang: str
    title: str | None
    directive: str | None
    text: str

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page.name
        return f"{page}:{self.line}"


def blocks_of(page: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``page`` in order, indented ones (admonitions, tabs) included."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, fence, info = opened["indent"], opened["fence"], opened["info"].strip()
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence):
            body.append(lines[end][len(indent) :] if lines[end].startswith(indent) else lines[end].lstrip())
            end += 1
        title = _TITLE.search(info)
        found.append(
            Block(
                page=page,
                line=index + 1,
                lang=info.split()[0].lower() if info else "",
                title=title["title"] if title else None,
                directive=_directive_before(lines, index),
                text="\n".join(body) + "\n",
            )
        )
        index = end + 1
    return found


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}


def _directive_before(lines: Sequence[str], index: int) -> str | None:
    previous = index - 1
    while previous >= 0 and not lines[previous].strip():
        previous -= 1
    if previous < 0:
        return None
    matched = _DIRECTIVE.match(lines[previous].strip())
    return matched["name"] if matched else None


# ----------------------------------------------------------------------------------------- running a page
@dataclass
class Session:
    """One page's directory, the interpreter and ``bin`` its samples use, and the servers it started."""

    directory: Path
    python: str = sys.executable
    port: str = DEFAULT_PORT
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def bin_dir(self) -> Path:
        return Path(self.python).parent

    def environ(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TSUMUGI_", "PYTEST_"))}
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = str(self.directory)
        env["NO_COLOR"] = "1"
        env.pop("VIRTUAL_ENV", None)
        return env

    def text(self, block: Block) -> str:
        return block.text.replace(DEFAULT_PORT, self.port)


def run_page(page: Path, directory: Path, *, python: str = sys.executable, text: str | None = None) -> None:
    """Run every sample of ``page`` in ``directory``; raise ``AssertionError`` naming the failing block."""
    blocks = blocks_of(page, text)
    directory.mkdir(parents=True, exist_ok=True)
    session = Session(directory, python=python)
    if any(block.directive == "serve" for block in blocks):
        session.port = str(free_port())
    try:
        for block in blocks:
            run_block(block, session)
    finally:
        stop_servers(session)


def run_block(block: Block, session: Session) -> None:
    if block.lang in PYTHON:
        _python_block(block, session)
    elif block.lang in SHELL:
        check_shell(block, session.text(block))
        if block.directive == "run":
            _run(block, session, ["bash", "-euo", "pipefail", "-c", session.text(block)])
        elif block.directive == "serve":
            _serve(block, session)
    elif block.lang in PARSED:
        _parse(block)
    elif block.lang not in PROSE:
        raise AssertionError(f"{block.where}: a ```{block.lang or '(no language)'} block has no rule")


def _python_block(block: Block, session: Session) -> None:
    source = session.text(block)
    compile(source, block.where, "exec")
    if block.directive == "worker":
        _check_worker_imports(block, source)
        if block.title:
            _write(session.directory / block.title, source)
        return
    if block.title is None:
        script = session.directory / f"_sample_line_{block.line}.py"
        _write(script, source)
        _run(block, session, [session.python, script.name])
        return
    path = session.directory / block.title
    _write(path, source)
    if path.name.startswith("test_"):
        _run(block, session, [session.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", block.title])
    else:
        _run(block, session, [session.python, block.title])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _run(block: Block, session: Session, argv: list[str]) -> None:
    try:
        done = subprocess.run(
            argv,
            cwd=session.directory,
            env=session.environ(),
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"{block.where}: did not finish in {SCRIPT_TIMEOUT_S:.0f} s") from error
    if done.returncode != 0:
        raise AssertionError(
            f"{block.where}: exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            + _server_logs(session)
        )


def _serve(block: Block, session: Session) -> None:
    command = session.text(block).strip()
    assert "\n" not in command, f"{block.where}: a served block holds exactly one command"
    argv = shlex.split(command)
    if "dev" in argv and "--port" not in argv:
        command += f" --port {session.port}"  # tsumugi dev's default port is the one the pages name
    log_path = session.directory / f"_served_line_{block.line}.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            ["bash", "-c", f"exec env {command}"],
            cwd=session.directory,
            env=session.environ(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    session.servers.append(server)
    session.log.append(str(log_path))
    give_up_at = time.monotonic() + SERVE_DEADLINE_S
    while not _listening(int(session.port)):
        if server.poll() is not None or time.monotonic() > give_up_at:
            failed = f"{block.where}: `{command}` did not start listening"
            raise AssertionError(failed + _server_logs(session))
        time.sleep(0.05)  # a child process starts; bounded by SERVE_DEADLINE_S (noqa: sleep-ok)


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def stop_servers(session: Session) -> None:
    """SIGINT to each server this session started (only those), then a kill after the grace."""
    for server in session.servers:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    session.servers.clear()


def _server_logs(session: Session) -> str:
    return "".join(f"\n--- {path}\n{Path(path).read_text(errors='replace')[-4000:]}" for path in session.log)


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _parse(block: Block) -> None:
    try:
        if block.lang == "json":
            json.loads(block.text)
        elif block.lang == "jsonc":
            json5.loads(block.text)
        elif block.lang == "toml":
            tomllib.loads(block.text)
        else:
            yaml.safe_load(block.text)
    except Exception as error:
        raise AssertionError(f"{block.where}: the {block.lang} block does not parse: {error}") from error


def _check_worker_imports(block: Block, source: str) -> None:
    """Every ``from tsumugi.x import A`` of Worker-only code names a module file that defines ``A``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tsumugi":
            defined = _names_defined(node.module)
            for alias in node.names:
                assert alias.name in defined, f"{block.where}: {node.module} has no {alias.name}"


def _names_defined(module: str) -> set[str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"no module {module}"
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign):
            targets = [target.id for target in node.targets if isinstance(target, ast.Name)]
            names.update(targets)
            if targets == ["__all__"] and isinstance(node.value, ast.List | ast.Tuple):
                names.update(item.value for item in node.value.elts if isinstance(item, ast.Constant))
    return names  # what a lazy module (``__getattr__``) exports is in its ``__all__``


# ------------------------------------------------------------------------------------ checking commands
def check_shell(block: Block, text: str) -> None:
    """Every command of a shell block exists; see the module docstring for what each program checks."""
    for argv in commands_of(text):
        try:
            check_command(argv)
        except AssertionError as error:
            raise AssertionError(f"{block.where}: `{shlex.join(argv)}`: {error}") from None


def commands_of(text: str) -> Iterator[list[str]]:
    """Simple commands, split at ``&&``, ``||``, ``;`` and ``|``, leading ``VAR=value`` words dropped."""
    logical = text.replace("\\\n", " ")
    for line in logical.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set(";&|"):
                while current and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", current[0]):
                    current.pop(0)
                if current:
                    yield current
                current = []
            else:
                current.append(token)


def check_command(argv: list[str]) -> None:
    program = argv[0]
    if program == "tsumugi" or program.endswith("/tsumugi"):
        check_tsumugi(argv[1:])
    elif program.startswith(("scripts/", "./scripts/")):
        script = REPO / program.removeprefix("./")
        assert script.is_file() and os.access(script, os.X_OK), "no such executable script in the repository"
    elif program == "npx":
        assert argv[1:2] == ["wrangler"], "npx runs only wrangler in these pages"
        _check_subcommand(argv[2:], WRANGLER_COMMANDS, "wrangler")
    elif program == "wrangler":
        _check_subcommand(argv[1:], WRANGLER_COMMANDS, "wrangler")
    elif program == "pywrangler":
        _check_subcommand(argv[1:], PYWRANGLER_COMMANDS, "pywrangler")
    elif program == "curl":
        check_curl(argv[1:])
    elif program.endswith(("/python", "/pip")) or program in PLAIN_PROGRAMS:
        return
    else:
        raise AssertionError(f"no rule for the program {program!r} (add one to tests/docs/samples.py)")


def _check_subcommand(args: list[str], known: frozenset[str], tool: str) -> None:
    words = [arg for arg in args if not arg.startswith("-")]
    assert words and words[0] in known, f"{tool} has no subcommand {words[:1]}"


@cache
def _tsumugi_help(*words: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tsumugi.cli.main", *words, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, f"`tsumugi {' '.join(words)} --help` exited {done.returncode}: {done.stderr}"
    return done.stdout


def check_tsumugi(args: list[str]) -> None:
    """The subcommand is listed by ``tsumugi --help``; each ``--option`` is in its own ``--help``."""
    words = [arg for arg in args if not arg.startswith("-")]
    assert words, "no subcommand"
    command = words[0]
    listed = re.findall(r"^\s{2,}([a-z][a-z-]*)\b", _tsumugi_help(), re.M)
    assert command in listed, f"tsumugi has no subcommand {command!r} (it has {sorted(set(listed))})"
    options = [arg.split("=")[0] for arg in args if arg.startswith("--")]
    if not options:
        return
    helps = _tsumugi_help(command)
    if len(words) > 1 and any(option not in helps for option in options):
        helps += _tsumugi_help(command, words[1])  # a nested command (`tsumugi jobs list --json`)
    for option in options:
        assert re.search(rf"{re.escape(option)}\b", helps), f"`tsumugi {command}` has no option {option}"


def check_curl(args: list[str]) -> None:
    """``curl [-X M] URL``: an ``/api/`` URL must be a path of the OpenAPI document with that method."""
    method = "GET"
    url = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-X", "--request"):
            method = args[index + 1].upper()
            index += 2
            continue
        if arg in ("-d", "--data", "--data-raw", "--json") and method == "GET":
            method = "POST"
        if arg in ("-H", "--header", "-d", "--data", "--data-raw", "--json", "-o", "-w", "-b", "--cookie"):
            index += 2
            continue
        if not arg.startswith("-"):
            url = arg
        index += 1
    assert url is not None, "no URL"
    path = re.sub(r"^https?://[^/]+", "", url).split("?")[0] or "/"
    if not path.startswith("/api/"):
        return  # the dashboard, /metrics, or the app's own routes (http_routes)
    for template, methods in openapi_paths().items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", r"[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and method.lower() in methods:
            return
    raise AssertionError(f"{method} {path} is not in src/tsumugi/api/openapi.json")


@cache
def openapi_paths() -> dict[str, frozenset[str]]:
    document = json.loads((REPO / "src" / "tsumugi" / "api" / "openapi.json").read_text(encoding="utf-8"))
    return {path: frozenset(item) for path, item in document["paths"].items()}
