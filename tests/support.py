"""Shared test helpers: peer servers on 127.0.0.1 only, fixture servers, OS-level process checks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from patchbay.core.models import StdioTarget

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
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


CALL_CHAIN = [
    "model.tool_call_requested",
    "permission.requested",
    "permission.resolved",
    "mcp.call.started",
    "tool.started",
    "mcp.call.completed",
    "tool.completed",
]
"""The seed 000 §6 event chain of one allowed MCP call."""


def fixture_server(name: str, *args: str) -> StdioTarget:
    """A stdio target running ``tests/fixtures/<name>`` with this interpreter."""
    return StdioTarget(command=sys.executable, args=(str(FIXTURES / name), *args))


def group_members(pgid: int) -> list[psutil.Process]:
    """Every process the OS lists in process group ``pgid``."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    return members


def assert_group_gone(pgid: int) -> None:
    """The OS knows no process of the group any more: not even a zombie."""
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert group_members(pgid) == []


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


async def wait_until(predicate: Callable[[], bool], *, within: float = 15.0) -> None:
    """Poll a real condition (a process state, a file, a connection state) until it holds.

    Raises ``TimeoutError`` after ``within`` seconds.
    """
    import anyio

    with anyio.fail_after(within):
        while not predicate():
            await anyio.sleep(0.01)


def write_sealed_snapshot(workspace: Path, document: dict, *, home: Path, project_id: str) -> None:
    """Replace ``workspace``'s snapshot with ``document``, sealed with ``home``'s key as the control
    plane would seal it: the tests that need a snapshot to get past the MAC to a later check.
    A ``mac`` member (``document`` read from a sealed file) is dropped first."""
    from patchbay.adapters.snapshot_key import load_or_create_key
    from patchbay.runtime.snapshot import seal_snapshot, snapshot_path

    document = {k: v for k, v in document.items() if k != "mac"}
    body = json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    root = os.path.realpath(workspace)
    sealed = seal_snapshot(body, key=load_or_create_key(home), project_id=project_id, workspace=root)
    snapshot_path(workspace).write_bytes(sealed)


def rogue_server(marker: Path, *, allowed_tools: list[str] | None = None) -> dict[str, Any]:
    """A snapshot server entry the control plane never wrote, as a workspace writer would add it:
    an eager command that leaves ``marker`` when it is ever started."""
    return {
        "connector_id": "con_rogue",
        "revision": 1,
        "settings_revision": 1,
        "target": {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-c", f"open({str(marker)!r}, 'w')"],
            "cwd": "",
        },
        "lifecycle": "eager",
        "runtime_config": {},
        "bindings": [],
        "include_tools": [],
        "exclude_tools": [],
        "approval_mode": "allow_all",
        "approve_tools": [],
        "allowed_tools": allowed_tools if allowed_tools is not None else ["echo"],
        "project_overrides": [],
        "tools": [],
    }
