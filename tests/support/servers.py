"""Servers a test runs: the fixture servers of tests/fixtures/, and the npm and PyPI peers
(server-everything, mcp-server-git). 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbay.core.models import StdioTarget
from tests.support.paths import FIXTURES, REPO

EVERYTHING_ENTRY = REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

LOOPBACK_PRELOAD = FIXTURES / "loopback-only.cjs"


def require_peers() -> None:
    """Fail (in CI) or skip (elsewhere) when the npm peers are not installed."""
    if EVERYTHING_ENTRY.exists():
        return
    message = f"npm peers missing ({EVERYTHING_ENTRY}); run `npm ci` in {REPO}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not on PATH")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, deadline_s: float = 20.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server-everything exited early with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)  # polling a port that has no readiness event; bounded by the deadline
    raise RuntimeError(f"server-everything did not listen on 127.0.0.1:{port} within {deadline_s}s")


@contextlib.contextmanager
def everything_http(kind: str = "streamableHttp") -> Iterator[str]:
    """Run server-everything's ``streamableHttp`` or ``sse`` transport on a free loopback port.

    Yields the endpoint URL (``/mcp`` or ``/sse``); the process group is killed on exit.
    """
    require_peers()
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen(
        [node(), "-r", str(LOOPBACK_PRELOAD), str(EVERYTHING_ENTRY), kind],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/{'sse' if kind == 'sse' else 'mcp'}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait(timeout=10)


def everything_stdio_command() -> list[str]:
    """The argv that runs server-everything over stdio."""
    require_peers()
    return [node(), str(EVERYTHING_ENTRY), "stdio"]


def make_git_repo(path: Path, filename: str = "hello-from-test.txt") -> Path:
    """A git repository with one untracked file, for mcp-server-git."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / filename).write_text("hello\n")
    return path


def fixture_server(name: str, *args: str) -> StdioTarget:
    """A stdio target running ``tests/fixtures/<name>`` with this interpreter."""
    return StdioTarget(command=sys.executable, args=(str(FIXTURES / name), *args))


@contextlib.contextmanager
def socket_server() -> Iterator[str]:
    """Run tests/fixtures/socket_server.py on a fresh socket in a private /tmp dir; yield its path."""
    with tempfile.TemporaryDirectory(prefix="pb-", dir="/tmp") as directory:
        path = f"{directory}/mcp.sock"
        process = subprocess.Popen(
            [sys.executable, str(FIXTURES / "socket_server.py"), path], stdout=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout.readline().strip() == "ready", "socket server did not start"
            yield path
        finally:
            process.terminate()
            process.wait(timeout=10)
