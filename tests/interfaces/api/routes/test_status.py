"""Live runtime status over REST: ``runtime_state`` and ``runtime`` in the connector list and
detail come from the hosted sessions (the registry), and ``GET /api/mcp/status/stream`` pushes
the changes as Server-Sent Events. Against real stdio servers: mcp-server-time (PyPI) and
tests/fixtures/lifecycle_server.py (for a call that stays in flight)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.api import Api
from tests.support.paths import FIXTURES
from tests.support.serve import serve_process
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")
CANARY = "cnryLIVESTATUSa1b2c3d4e5f6"
TIME = {"transport": "stdio", "command": "mcp-server-time"}


async def entry(api: Api, name: str) -> dict[str, Any]:
    answer = await api.client.get("/api/mcp/connectors")
    assert answer.status_code == 200, answer.text
    return next(c for c in answer.json()["connectors"] if c["name"] == name)


async def call(api: Api, session: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = await api.client.post(
        f"/api/sessions/{session}/call", json={"tool": tool, "arguments": arguments, "approve": "once"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def test_a_hosted_session_makes_the_list_and_detail_show_the_live_state(api: Api) -> None:
    await api.create("time", TIME, enabled=True)
    life_target = {"transport": "stdio", "command": sys.executable, "args": [LIFECYCLE]}
    life = await api.create(
        "life", life_target, enabled=True, bindings=[{"delivery": "env", "name": "LIVE_KEY", "value": CANARY}]
    )
    registry = api.app.state.context.status
    before = await entry(api, "time")
    assert (before["runtime_state"], before["status"], before["runtime"]) == ("unknown", "unknown", None)

    opened = await api.client.post("/api/sessions", json={"cwd": str(api.workspace)})
    assert opened.status_code == 201, opened.text
    sid = opened.json()["session_id"]
    idle = await entry(api, "time")  # lazy: not connected yet, so the cache still speaks
    assert idle["runtime_state"] == "unknown" and idle["runtime"]["state"] == "not-connected"

    result = await call(api, sid, "mcp.time.get_current_time", {"timezone": "UTC"})
    assert "UTC" in result["content"][0]["text"]
    live = await entry(api, "time")
    assert (live["runtime_state"], live["status"]) == ("connected", "connected")
    runtime = live["runtime"]
    assert (runtime["state"], runtime["sessions"], runtime["in_flight"], runtime["restarts"]) == ("connected", 1, 0, 0)
    assert runtime["tool_count"] == 2 and runtime["failure_age"] is None and runtime["updated_at"] > 0
    detail = (await api.client.get("/api/mcp/connectors/time")).json()
    assert (detail["runtime_state"], detail["status"], detail["runtime"]) == ("connected", "connected", runtime)

    # a call in flight is counted while it runs, and not after
    async with anyio.create_task_group() as tg:
        tg.start_soon(call, api, sid, "mcp.life.sleep", {"seconds": 1, "tag": "slow"})
        await wait_until(lambda: (s := registry.read(life["connector_id"])) is not None and s.in_flight == 1)
    assert (await entry(api, "life"))["runtime"]["in_flight"] == 0

    # nothing sensitive is in the registry: no credential, command, path or schema
    kept = repr(registry._by_source)
    for word in (CANARY, LIFECYCLE, "mcp-server-time", "timezone", "LIVE_KEY", "properties"):
        assert word not in kept, word
    assert CANARY not in json.dumps(await entry(api, "life"))

    closed = await api.client.delete(f"/api/sessions/{sid}")
    assert closed.status_code == 200, closed.text
    after = await entry(api, "time")  # the runtime stopped: back to what the cache says
    assert (after["runtime_state"], after["runtime"]) == ("unknown", None)


async def test_the_stream_pushes_a_connector_s_change_from_a_real_serve(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    with serve_process(home, workspace) as served:
        async with httpx2.AsyncClient(base_url=served.url, headers=served.headers, timeout=30) as client:
            created = await client.post("/api/mcp/connectors", json={"name": "time", "target": TIME, "enabled": True})
            assert created.status_code == 201, created.text
            connector_id = created.json()["connector_id"]
            events: list[dict[str, Any]] = []
            with anyio.fail_after(60):
                async with client.stream("GET", "/api/mcp/status/stream") as stream:
                    assert stream.status_code == 200
                    assert stream.headers["content-type"].startswith("text/event-stream")
                    opened = await client.post("/api/sessions", json={"cwd": str(workspace)})
                    assert opened.status_code == 201, opened.text
                    sid = opened.json()["session_id"]
                    answer = await client.post(
                        f"/api/sessions/{sid}/call",
                        json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}, "approve": "once"},
                    )
                    assert answer.status_code == 200, answer.text
                    kind = None
                    async for line in stream.aiter_lines():
                        if line.startswith("event: "):
                            kind = line.removeprefix("event: ")
                        elif line.startswith("data: ") and kind == "status":
                            events.append(json.loads(line.removeprefix("data: ")))
                            if events[-1]["runtime_state"] == "connected":
                                break
            last = events[-1]
            assert set(last) == {"connector_id", "name", "runtime_state", "status", "runtime"}
            assert (last["connector_id"], last["name"], last["status"]) == (connector_id, "time", "connected")
            assert last["runtime"]["state"] == "connected" and last["runtime"]["in_flight"] == 0
            assert all(e["connector_id"] == connector_id for e in events)
            text = json.dumps(events)
            assert "mcp-server-time" not in text and "target" not in text and "timezone" not in text
            assert (await client.delete(f"/api/sessions/{sid}")).status_code == 200


async def test_an_open_stream_does_not_hold_up_the_shutdown_of_serve(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    with serve_process(home, workspace) as served:
        async with httpx2.AsyncClient(base_url=served.url, headers=served.headers, timeout=30) as client:
            async with client.stream("GET", "/api/mcp/status/stream") as stream:
                lines = stream.aiter_lines()
                assert await anext(lines) == "retry: 3000"
                served.process.send_signal(signal.SIGINT)
                # well within the shutdown grace (5 s) plus the answer grace (5 s) uvicorn allows
                with anyio.fail_after(4):
                    async for _ in lines:
                        pass
        with anyio.fail_after(15):
            while served.process.poll() is None:
                await anyio.sleep(0.05)  # the process has no event to wait on; bounded
        assert served.process.returncode == 0
