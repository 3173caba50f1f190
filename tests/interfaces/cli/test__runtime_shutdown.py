"""SIGTERM of a governed CLI call stops it like Ctrl-C: the hung call is cancelled at once (not
after its timeout), the command reports ``cancelled`` and its server is stopped. A real
``patchbay call`` process and a real fixture server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from tests.support.paths import FIXTURES


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_sigterm_of_a_cli_call_cancels_the_hung_call_and_stops_its_server(tmp_path: Path) -> None:
    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home")}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    record = tmp_path / "life.jsonl"
    server = [sys.executable, str(FIXTURES / "lifecycle_server.py"), "--record", str(record)]
    for command in (
        ["connector", "add", "life", "--", *server],
        ["connector", "set", "life", "--request-timeout", "900"],
    ):
        subprocess.run(["patchbay", *command], env=env, check=True, capture_output=True, timeout=120, cwd=workspace)
    call = subprocess.Popen(
        ["patchbay", "call", "mcp.life.sleep", '{"seconds": 900, "tag": "hung"}', "--yes", "--json"],
        env=env,
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while {"started": "hung"} not in records(record):  # a bounded poll: another process writes it
            assert call.poll() is None, call.communicate()
            assert time.monotonic() < deadline, "the call never reached the server"
            time.sleep(0.05)
        (pid,) = [entry["launch"] for entry in records(record) if "launch" in entry]
        call.send_signal(signal.SIGTERM)
        out, err = call.communicate(timeout=120)  # generous, and far below the call's 900 s timeout
    finally:
        if call.poll() is None:
            call.kill()
            call.communicate(timeout=30)
    assert call.returncode == 130, err
    assert json.loads(out or err)["error"]["code"] == "cancelled"
    try:
        psutil.Process(pid).wait(timeout=30)
    except psutil.NoSuchProcess:
        pass
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
