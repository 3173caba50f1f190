"""Changes committed by another process reach the sessions ``serve`` hosts before their next call:
a separate ``patchbay grant`` CLI process, and a second ``patchbay serve`` on the same data home
(the store's change counter, read before each hosted call). Against tests/fixtures/lifecycle_server.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import requests

from tests.support.api import Api, error_of
from tests.support.paths import FIXTURES
from tests.support.serve import serve_process

pytestmark = pytest.mark.anyio

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")
TARGET = {"transport": "stdio", "command": sys.executable, "args": [LIFECYCLE]}


def cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``patchbay --home HOME ARGV``, a separate process; asserts it succeeded."""
    done = subprocess.run(["patchbay", "--home", str(home), *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


async def test_grants_set_with_the_cli_reach_an_open_session_before_its_next_call(api: Api) -> None:
    await api.create("life", TARGET, enabled=True)  # approval_mode ask: every tool asks
    opened = await api.client.post("/api/sessions", json={"cwd": str(api.workspace)})
    assert opened.status_code == 201, opened.text
    sid = opened.json()["session_id"]

    async def call(tool: str) -> tuple[int, dict]:
        answer = await api.client.post(
            f"/api/sessions/{sid}/call", json={"tool": tool, "arguments": {"text": "hi"}}, timeout=60
        )
        return answer.status_code, answer.json()

    async def tools() -> dict[str, str]:
        answer = await api.client.get(f"/api/sessions/{sid}/tools")
        assert answer.status_code == 200, answer.text
        return {tool["name"]: tool["decision"] for tool in answer.json()["tools"]}

    with anyio.fail_after(240):
        status, body = await call("mcp.life.echo")
        assert (status, body["error"]["code"]) == (403, "approval_unavailable")

        await anyio.to_thread.run_sync(cli, api.home, "grant", "life", "echo", "allow")
        status, body = await call("mcp.life.echo")
        assert status == 200 and body["model_text"] == "[mcp:life:echo]\nhi"
        assert (await tools())["mcp.life.echo"] == "allow"

        await anyio.to_thread.run_sync(cli, api.home, "grant", "life", "echo", "deny")
        assert "mcp.life.echo" not in await tools()
        status, body = await call("mcp.life.echo")
        assert (status, body["error"]["code"]) == (422, "unknown_tool")
        info = (await api.client.get(f"/api/sessions/{sid}")).json()
        assert (info["state"], info["builds"]) == ("ready", 3)


async def test_a_deny_through_a_second_serve_reaches_the_sessions_of_the_first(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()

    def scenario() -> None:
        with serve_process(home, workspace) as first, serve_process(home, workspace) as second:
            body = {"name": "life", "target": TARGET, "enabled": True}
            assert (
                requests.post(
                    f"{first.url}/api/mcp/connectors", json=body, headers=first.headers, timeout=30
                ).status_code
                == 201
            )
            allowed = requests.put(
                f"{first.url}/api/mcp/connectors/life/tools/echo",
                json={"decision": "allow"},
                headers=first.headers,
                timeout=30,
            )
            assert allowed.ok, allowed.text
            opened = requests.post(
                f"{first.url}/api/sessions", json={"cwd": str(workspace)}, headers=first.headers, timeout=30
            )
            assert opened.status_code == 201, opened.text
            sid = opened.json()["session_id"]
            call = {"tool": "mcp.life.echo", "arguments": {"text": "hi"}}
            answer = requests.post(f"{first.url}/api/sessions/{sid}/call", json=call, headers=first.headers, timeout=60)
            assert answer.status_code == 200, answer.text

            denied = requests.put(
                f"{second.url}/api/mcp/connectors/life/tools/echo",
                json={"decision": "deny"},
                headers=second.headers,
                timeout=30,
            )
            assert denied.ok, denied.text
            assert denied.json()["runtime_reload"]["sessions"] == []  # the second serve hosts none

            answer = requests.post(f"{first.url}/api/sessions/{sid}/call", json=call, headers=first.headers, timeout=60)
            assert answer.status_code == 422 and error_of(answer)["code"] == "unknown_tool", answer.text
            listed = requests.get(f"{first.url}/api/sessions/{sid}/tools", headers=first.headers, timeout=60).json()[
                "tools"
            ]
            assert "mcp.life.echo" not in {tool["name"] for tool in listed}
        assert first.process.returncode == 0 and second.process.returncode == 0

    with anyio.fail_after(240):
        await anyio.to_thread.run_sync(scenario)
