"""``/mcp`` on a real ``patchbay serve`` (uvicorn on 127.0.0.1), driven by the official SDK client
over Streamable HTTP, in front of real ``mcp-server-time`` peers: both protocol eras, the modes,
the guards, one runtime per workspace, and reload on projection changes (through the store's
change-counter poll too while the wake-ups' Redis is unreachable); and upstream elicitation
relayed to the host, in front of the real server-everything."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from patchbay.adapters.store import open_store
from patchbay.core.settings import Settings
from patchbay.interfaces.cli import app
from tests.support.api import Api
from tests.support.gateway import error_of
from tests.support.paths import FIXTURES
from tests.support.serve import Served, serve_process
from tests.support.servers import everything_stdio_command, free_port

pytestmark = pytest.mark.anyio

BIN = str(Path(sys.executable).parent)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def run(home: Path) -> Callable[..., Any]:
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        result = runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    return invoke


@pytest.fixture
def served(run: Callable[..., Any], home: Path, workspace: Path) -> Iterator[Served]:
    """``time``: get_current_time allowed, convert_time denied; ``clock``: both ask (the
    default); then ``patchbay serve`` (gateway reload poll 0.2 s, approval wait 0.05 s) started in
    ``workspace``."""
    for name in ("time", "clock"):
        run("connector", "add", name, "--", "mcp-server-time")
        run("probe", name, "--project", str(workspace))
    run("grant", "time", "get_current_time", "allow")
    run("grant", "time", "convert_time", "deny")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PATCHBAY_BUILTINS": "off",
        "PATCHBAY_GATEWAY_RELOAD_POLL": "0.2",
        "PATCHBAY_GATEWAY_APPROVAL_WAIT": "0.05",  # an ask call ends approval_pending at once
    }
    with serve_process(home, workspace, env=env) as serving:
        yield serving


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
"""A bare 2025-era ``initialize`` request, as a host's first POST sends it."""


def http_client(served: Served, **headers: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={**served.headers, **headers}, timeout=httpx2.Timeout(30, read=300))


def gateway(client: httpx2.AsyncClient, url: str, *, mode: str = "legacy", message_handler: Any = None) -> Client:
    return Client(streamable_http_client(url, http_client=client), mode=mode, message_handler=message_handler)  # type: ignore[arg-type]


def session_ids(run: Callable[..., Any]) -> list[str]:
    return [s["session_id"] for s in json.loads(run("sessions", "--json").stdout)["sessions"]]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_direct_mode_lists_and_calls_the_governed_tools_in_both_protocol_eras(
    served: Served, workspace: Path, era: str
) -> None:
    with anyio.fail_after(90):
        async with http_client(served) as http, gateway(http, f"{served.url}/mcp?mode=direct", mode=era) as client:
            assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
            tools_capability = client.server_capabilities.tools
            assert tools_capability is not None and tools_capability.list_changed
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == {"time__get_current_time", "clock__get_current_time", "clock__convert_time"}
            assert "timezone" in listed["time__get_current_time"].input_schema["properties"]

            allowed = await client.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert not allowed.is_error
            assert "Asia/Tokyo" in allowed.content[0].text  # type: ignore[union-attr]

            denied = await client.call_tool(
                "time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
            assert error_of(denied)["code"] == "unknown_tool"  # a denied tool is not projected

            asked = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            error = error_of(asked)  # the person is asked on this serve's settings page
            assert error["code"] == "approval_pending" and error["tool"] == "mcp.clock.get_current_time"
            assert error["approvalUrl"] == f"{served.url}/ui#approval-{error['approvalId']}"


async def test_proxy_mode_and_the_project_header_share_one_runtime_per_workspace(
    served: Served, workspace: Path, run: Callable[..., Any]
) -> None:
    with anyio.fail_after(90):
        async with http_client(served) as http, gateway(http, f"{served.url}/mcp?mode=proxy") as proxy:
            assert [tool.name for tool in (await proxy.list_tools()).tools] == ["mcp"]
            found = await proxy.call_tool("mcp", {"action": "search", "query": "current time"})
            assert not found.is_error and "get_current_time" in found.content[0].text  # type: ignore[union-attr]
            called = await proxy.call_tool(
                "mcp", {"action": "call", "tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}}
            )
            assert not called.is_error
        # the same workspace named by the header, in direct mode, from another session
        async with (
            http_client(served, **{"X-Patchbay-Project": str(workspace)}) as http,
            gateway(http, f"{served.url}/mcp?mode=direct", mode="auto") as direct,
        ):
            again = await direct.call_tool("time__get_current_time", {"timezone": "UTC"})
            assert not again.is_error
    sessions = session_ids(run)
    assert len(sessions) == 1  # one runtime (one event-log session) served both sessions and modes
    events = json.loads(run("events", sessions[0], "--json").stdout)["events"]
    completed = [e for e in events if e["type"] == "mcp.call.completed"]
    assert len(completed) == 2


async def test_a_request_without_the_token_is_401_and_a_foreign_origin_403(served: Served) -> None:
    initialize = INITIALIZE
    accept = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=10) as http:
            bare = await http.post(f"{served.url}/mcp", json=initialize, headers=accept)
            assert bare.status_code == 401 and bare.json()["error"]["code"] == "unauthorized"
            assert bare.headers["www-authenticate"].startswith("Bearer")
            foreign = await http.post(
                f"{served.url}/mcp", json=initialize, headers={**accept, **served.headers, "Origin": "http://evil.test"}
            )
            assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "origin_refused"
            bad_mode = await http.post(
                f"{served.url}/mcp?mode=loud", json=initialize, headers={**accept, **served.headers}
            )
            assert bad_mode.status_code == 422 and bad_mode.json()["error"]["details"]["field"] == "mode"
        # the SDK client as a host without the token cannot even initialize
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
            with pytest.raises(ExceptionGroup) as refused:
                async with gateway(http, f"{served.url}/mcp", mode="legacy"):
                    pass
            assert "Server returned an error response" in repr(refused.value) or "401" in repr(refused.value)


@pytest.fixture
async def listening(served: Served) -> AsyncIterator[tuple[Client, dict[type, anyio.Event]]]:
    """A 2025-era host in direct mode that has listed the tools; each event is set on its first
    ``notifications/{tools,resources,prompts}/list_changed``."""
    changed = {
        kind: anyio.Event()
        for kind in (
            types.ToolListChangedNotification,
            types.ResourceListChangedNotification,
            types.PromptListChangedNotification,
        )
    }

    async def on_message(message: Any) -> None:
        if type(message) in changed:
            changed[type(message)].set()

    async with (
        http_client(served) as http,
        gateway(http, f"{served.url}/mcp?mode=direct", message_handler=on_message) as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "time__get_current_time" in names
        yield client, changed


async def test_a_grant_changed_through_the_api_reaches_a_connected_host_as_list_changed(
    served: Served, listening: tuple[Client, dict[type, anyio.Event]]
) -> None:
    client, changed = listening
    with anyio.fail_after(60):
        async with http_client(served) as http:
            response = await http.put(
                f"{served.url}/api/mcp/connectors/time/tools/get_current_time", json={"decision": "deny"}
            )
            assert response.status_code == 200, response.text
        for event in changed.values():  # a reload may change resources and prompts too: all three
            await event.wait()
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "time__get_current_time" not in names and "clock__get_current_time" in names
        refused = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert error_of(refused)["code"] == "unknown_tool"


async def test_a_connector_disabled_by_another_process_reaches_a_2026_host_on_its_listen_stream(
    served: Served, run: Callable[..., Any]
) -> None:
    with anyio.fail_after(60):
        async with (
            http_client(served) as http,
            gateway(http, f"{served.url}/mcp?mode=direct", mode="auto") as client,
        ):
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "clock__get_current_time" in names
            async with client.listen(tools_list_changed=True) as subscription:
                run("connector", "disable", "clock")  # this test process: the serve sees the store move
                async for event in subscription:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
            after = {tool.name for tool in (await client.list_tools()).tools}
            assert after == {"time__get_current_time"}


async def test_a_connector_added_through_the_api_brings_its_resources_and_prompts_to_a_connected_host(
    served: Served, listening: tuple[Client, dict[type, anyio.Event]], tmp_path: Path
) -> None:
    client, changed = listening
    fixture = str(FIXTURES / "resources_server.py")
    target = {"transport": "stdio", "command": sys.executable, "args": [fixture, "--record", str(tmp_path / "r.jsonl")]}
    with anyio.fail_after(60):
        async with http_client(served) as http:
            created = await http.post(
                f"{served.url}/api/mcp/connectors", json={"name": "res", "target": target, "enabled": True}
            )
            assert created.status_code == 201, created.text
            await changed[types.ResourceListChangedNotification].wait()
            await changed[types.PromptListChangedNotification].wait()
            resources = (await client.list_resources()).resources
            assert len(resources) == 50 and all(r.uri.startswith("patchbay://res/") for r in resources)
            prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
            assert {"res__greet", "res__plain"} <= prompts

            uri = "patchbay://res/fixture%3A%2F%2Fdoc%2F5"
            with pytest.raises(MCPError) as asked:  # a resource read asks by default; a host cannot approve
                await client.read_resource(uri)
            data = asked.value.error.data
            assert data is not None and data["code"] == "approval_pending"
            assert data["approvalUrl"] == f"{served.url}/ui#approval-{data['approvalId']}"
            changed[types.ResourceListChangedNotification] = anyio.Event()
            granted = await http.put(f"{served.url}/api/mcp/connectors/res/resources/grant", json={"decision": "allow"})
            assert granted.status_code == 200, granted.text
            await changed[types.ResourceListChangedNotification].wait()  # the reload took the grant
            read = await client.read_resource(uri)
            assert read.contents[0].text == "Document 5"  # type: ignore[union-attr]


async def test_an_ask_call_is_approved_on_the_settings_page_and_its_identical_call_then_proceeds(
    served: Served, run: Callable[..., Any]
) -> None:
    with anyio.fail_after(90):
        async with http_client(served) as http, gateway(http, f"{served.url}/mcp?mode=direct") as client:
            asked = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            error = error_of(asked)
            assert error["code"] == "approval_pending"
            text = asked.content[0].text  # type: ignore[union-attr]
            assert error["approvalUrl"] in text and "exactly the same arguments" in text
            listed = (await http.get(f"{served.url}/api/approvals")).json()["approvals"]
            assert [(a["id"], a["name"], a["arguments"]) for a in listed] == [
                (error["approvalId"], "mcp.clock.get_current_time", {"timezone": "UTC"})
            ]  # the approval outlived the call

            again = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            assert error_of(again)["approvalId"] == error["approvalId"]  # not answered yet: the same one
            other = await client.call_tool("clock__get_current_time", {"timezone": "Asia/Tokyo"})
            assert error_of(other)["approvalId"] != error["approvalId"]  # other arguments: asked anew

            [approval] = [a for a in listed if a["id"] == error["approvalId"]]
            answered = await http.post(
                f"{served.url}/api/approvals/{approval['id']}",
                json={"answer": "allow_once", "digest": approval["arguments_digest"], "policy": approval["policy"]},
            )
            assert answered.status_code == 200, answered.text
            allowed = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            assert not allowed.is_error and "UTC" in allowed.content[0].text  # type: ignore[union-attr]
            left = (await http.get(f"{served.url}/api/approvals")).json()["approvals"]
            assert [a["id"] for a in left] == [error_of(other)["approvalId"]]  # used once
            once = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            assert error_of(once)["code"] == "approval_pending"  # allow once: the next call asks again

    [session] = [s for s in session_ids(run)]
    events = json.loads(run("events", session, "--json").stdout)["events"]
    resolved = [e["payload"]["sourcedFrom"] for e in events if e["type"] == "permission.resolved"]
    assert resolved == ["approval_pending"] * 3 + ["user_allow_once", "approval_pending"]
    failed = [e["payload"]["reason"] for e in events if e["type"] == "tool.failed"]
    assert failed == ["approval_pending"] * 4


@pytest.mark.parametrize("where", ["query", "header"])
@pytest.mark.parametrize("relative", ["ws", "./ws", "~/ws", "ws/../ws"])
async def test_a_relative_workspace_is_422_naming_the_cwd_field(api: Api, where: str, relative: str) -> None:
    initialize = INITIALIZE
    headers = {"Accept": "application/json, text/event-stream"}
    params: dict[str, str] = {}
    if where == "query":
        params["cwd"] = relative
    else:
        headers["X-Patchbay-Project"] = relative
    with anyio.fail_after(30):
        answer = await api.client.post("/mcp", json=initialize, headers=headers, params=params)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "validation_error" and error["details"]["field"] == "cwd"
    assert "absolute" in error["message"]
    assert not (api.workspace / ".patchbay").exists()  # no project was made of anything


async def test_an_absolute_workspace_is_served(api: Api) -> None:
    """The same request with the workspace's absolute path initializes (the check refuses only
    relative ones)."""
    initialize = INITIALIZE
    headers = {"Accept": "application/json, text/event-stream", "X-Patchbay-Project": str(api.workspace)}
    with anyio.fail_after(30):
        answer = await api.client.post("/mcp", json=initialize, headers=headers)
    assert answer.status_code == 200, answer.text


@pytest.fixture
def served_without_redis(run: Callable[..., Any], home: Path, workspace: Path) -> Iterator[Served]:
    """``time`` (get_current_time allowed) and a ``patchbay serve`` whose ``PATCHBAY_REDIS_URL``
    names a port nothing listens on (gateway reload poll 0.2 s)."""
    run("connector", "add", "time", "--", "mcp-server-time")
    run("probe", "time", "--project", str(workspace))
    run("grant", "time", "get_current_time", "allow")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PATCHBAY_BUILTINS": "off",
        "PATCHBAY_GATEWAY_RELOAD_POLL": "0.2",
        "PATCHBAY_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
    }
    with serve_process(home, workspace, env=env) as serving:
        yield serving


@pytest.fixture
def eliciting(run: Callable[..., Any], home: Path, workspace: Path) -> Iterator[Served]:
    """server-everything (npm peer) with its elicitation tool allowed, behind ``patchbay serve``."""
    run("connector", "add", "everything", "--", *everything_stdio_command())
    run("probe", "everything", "--project", str(workspace))
    # the probe does not advertise elicitation, so its catalog lacks the tools the server offers
    # only to a client that does (the gateway's runtime): granted ahead of the catalog
    run("grant", "everything", "trigger-elicitation-request", "allow", "--unknown-ok")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PATCHBAY_BUILTINS": "off"}
    with serve_process(home, workspace, env=env) as serving:
        yield serving


async def test_with_redis_unreachable_the_change_counter_poll_still_reloads_a_connected_host(
    served_without_redis: Served, run: Callable[..., Any]
) -> None:
    """The wake-ups cannot reach Redis: ``/api/health`` says they are degraded (200), and a
    commit of another process still reaches the host through the poll."""
    served = served_without_redis
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(60):
        async with (
            http_client(served) as http,
            gateway(http, f"{served.url}/mcp?mode=direct", message_handler=on_message) as client,
        ):
            answer = await http.get(f"{served.url}/api/health")
            assert answer.status_code == 200
            assert answer.json()["status"] == "degraded"
            assert answer.json()["wakeups"] == {"backend": "redis", "state": "degraded"}
            assert "time__get_current_time" in {tool.name for tool in (await client.list_tools()).tools}
            run("grant", "time", "get_current_time", "deny")  # another process: only the poll sees it
            await changed.wait()
            assert "time__get_current_time" not in {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.peers
async def test_an_upstream_elicitation_reaches_the_http_host_of_the_call_in_both_eras_or_is_declined(
    eliciting: Served,
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": f"Grace Hopper {len(asked)}", "integer": 9})

    def text(result: types.CallToolResult) -> str:
        assert not result.is_error
        return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))

    tool = "everything__trigger-elicitation-request"
    url = f"{eliciting.url}/mcp?mode=direct"
    with anyio.fail_after(120):
        async with http_client(eliciting) as http:
            # a 2025-11-25 host declaring elicitation: asked on its call's response stream
            host = Client(streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=on_elicit)
            async with host as client:
                accepted = text(await client.call_tool(tool, {}))
            # the same era without the capability: declined, nobody asked
            async with gateway(http, url) as client:
                undeclared = text(await client.call_tool(tool, {}))
            # a 2026-07-28 host (stateless requests): an InputRequiredResult, then its retry
            modern = Client(streamable_http_client(url, http_client=http), mode="auto", elicitation_callback=on_elicit)
            async with modern as client:
                assert client.protocol_version == "2026-07-28"
                rounds = text(await client.call_tool(tool, {}))
    assert [params.message for params in asked] == ["Please provide inputs for the following fields:"] * 2
    assert "- Name: Grace Hopper 1" in accepted and "- Favorite Integer: 9" in accepted
    assert '"action": "decline"' in undeclared
    assert "- Name: Grace Hopper 2" in rounds


@pytest.fixture
def clock_home(run: Callable[..., Any], workspace: Path) -> None:
    """``clock``: mcp-server-time, its tools on ask (the default)."""
    run("connector", "add", "clock", "--", "mcp-server-time")
    run("probe", "clock", "--project", str(workspace))


@pytest.mark.usefixtures("clock_home")
async def test_the_approvals_a_serves_hosts_left_open_go_when_it_stops(home: Path, workspace: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PATCHBAY_BUILTINS": "off",
        "PATCHBAY_GATEWAY_APPROVAL_WAIT": "0.05",
    }
    with serve_process(home, workspace, env=env) as served, anyio.fail_after(60):
        async with http_client(served) as http, gateway(http, f"{served.url}/mcp?mode=direct") as client:
            asked = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            assert error_of(asked)["code"] == "approval_pending"
            listed = (await http.get(f"{served.url}/api/approvals")).json()["approvals"]
            assert [a["id"] for a in listed] == [error_of(asked)["approvalId"]]
    # the serve stopped: a next one must not list (and let a person answer) a call nobody makes
    repository = open_store(Settings(home=home))
    try:
        assert repository.approvals.pending() == []
    finally:
        repository.close()


async def test_two_different_cwd_values_are_422_saying_so(api: Api) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(30):
        answer = await api.client.post("/mcp?cwd=/a&cwd=/b", json=INITIALIZE, headers=headers)
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["details"]["field"] == "cwd" and "?cwd= values differ" in error["message"]


@pytest.mark.parametrize(("query", "field"), [("cwd=", "cwd"), ("project=/x", "project"), ("cwd=/x&mod=proxy", "mod")])
async def test_an_empty_cwd_or_an_unknown_parameter_is_422_not_the_default_workspace(
    api: Api, query: str, field: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(30):
        answer = await api.client.post(f"/mcp?{query}", json=INITIALIZE, headers=headers)
    assert answer.status_code == 422
    assert answer.json()["error"]["details"]["field"] == field
