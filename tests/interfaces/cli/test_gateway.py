"""``patchbay gateway --stdio`` as a real subprocess, driven by the official SDK client over stdio,
in front of real ``mcp-server-time`` peers."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from patchbay.runtime import read_events
from tests.support.events import CALL_CHAIN
from tests.support.gateway import error_of
from tests.support.paths import FIXTURES
from tests.support.serve import serve_process
from tests.support.servers import everything_stdio_command
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

PATCHBAY = str(Path(sys.executable).parent / "patchbay")


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
def governed_home(run: Callable[..., Any], workspace: Path) -> None:
    """``time``: get_current_time allowed, convert_time denied; ``clock``: both ask (the default)."""
    for name in ("time", "clock"):
        run("connector", "add", name, "--", "mcp-server-time")
        run("probe", name, "--project", str(workspace))
    run("grant", "time", "get_current_time", "allow")
    run("grant", "time", "convert_time", "deny")


def gateway(
    home: Path, workspace: Path, mode: str, *, era: str = "auto", env: dict[str, str] | None = None, **host: Any
) -> Client:
    """The SDK client as the host of a ``patchbay gateway --stdio --mode mode``: ``era`` its
    ``Client.mode`` (``legacy``: 2025-11-25), ``env`` more of the gateway's environment, ``host``
    more ``Client`` fields."""
    params = StdioServerParameters(
        command=PATCHBAY,
        args=["--home", str(home), "gateway", "--stdio", "--project", str(workspace), "--mode", mode],
        env={"PATH": os.environ["PATH"], "PATCHBAY_BUILTINS": "off", **(env or {})},
    )
    return Client(params, mode=era, **host)  # type: ignore[arg-type]


def logged_events(home: Path) -> list[dict[str, Any]]:
    """The events of the one session log under ``home``, read from its file as it is written."""
    logs = list((home / "sessions").glob("*.jsonl"))
    return read_events(logs[0]) if len(logs) == 1 else []


def session_events(run: Callable[..., Any]) -> list[dict[str, Any]]:
    sessions = json.loads(run("sessions", "--json").stdout)["sessions"]
    assert len(sessions) == 1
    return json.loads(run("events", sessions[0]["session_id"], "--json").stdout)["events"]


@pytest.mark.usefixtures("governed_home")
async def test_direct_mode_lists_governed_tools_and_routes_calls_through_the_governed_path(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    with anyio.fail_after(60):
        async with gateway(home, workspace, "direct") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == {"time__get_current_time", "clock__get_current_time", "clock__convert_time"}
            current = listed["time__get_current_time"]
            assert "timezone" in current.input_schema["properties"]
            assert current.annotations is not None and current.annotations.read_only_hint is True
            assert current.output_schema is not None and "datetime" in current.output_schema["properties"]

            allowed = await client.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert not allowed.is_error
            assert "Asia/Tokyo" in allowed.content[0].text  # type: ignore[union-attr]
            again = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            assert not again.is_error

            denied = await client.call_tool(
                "time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
            assert error_of(denied)["code"] == "unknown_tool"  # a denied tool is not projected at all

            asked = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            error = error_of(asked)
            assert error["code"] == "approval_unavailable" and error["tool"] == "mcp.clock.get_current_time"
            text = asked.content[0].text  # type: ignore[union-attr]
            assert "needs the person's approval" in text
            assert f"patchbay grant clock get_current_time allow --project {workspace}" in text

            unknown = await client.call_tool("nope__nothing", {})
            assert error_of(unknown)["code"] == "unknown_tool"

    events = session_events(run)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    calls: dict[str, list[str]] = {}
    for event in events:
        call_id = event["payload"].get("toolCallId")
        if call_id:
            calls.setdefault(call_id, []).append(event["type"])
    chains = list(calls.values())
    assert CALL_CHAIN in chains  # the allowed call: the whole seed 000 §6 chain
    connected = [e["payload"]["server"] for e in events if e["type"] == "mcp.server.connected"]
    assert connected.count("time") == 1  # one supervised connection, reused by both calls
    refused = [chain for chain in chains if chain[-1] == "tool.failed"]
    assert ["model.tool_call_requested", "permission.requested", "permission.resolved", "tool.failed"] in refused


@pytest.mark.usefixtures("governed_home")
async def test_proxy_mode_searches_describes_and_calls_with_guidance_for_bad_requests(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    with anyio.fail_after(60):
        async with gateway(home, workspace, "proxy") as client:
            (proxy,) = (await client.list_tools()).tools
            assert proxy.name == "mcp" and "only the MCP connectors Patchbay governs" in (proxy.description or "")

            search = await client.call_tool("mcp", {"action": "search", "query": "current time"})
            assert not search.is_error
            names = [tool["name"] for tool in (search.structured_content or {})["tools"]]
            assert "mcp__time__get_current_time" in names and "mcp__time__convert_time" not in names

            described = await client.call_tool("mcp", {"action": "describe", "tool": "mcp__time__get_current_time"})
            assert (described.structured_content or {})["canonicalName"] == "mcp.time.get_current_time"
            assert "timezone" in (described.structured_content or {})["inputSchema"]["properties"]

            called = await client.call_tool(
                "mcp",
                {"action": "call", "tool": "mcp__time__get_current_time", "arguments": '{"timezone": "Europe/Paris"}'},
            )
            assert not called.is_error and "Europe/Paris" in called.content[0].text  # type: ignore[union-attr]
            # the name a direct-mode gateway lists is understood too
            direct_name = await client.call_tool(
                "mcp", {"action": "call", "tool": "time__get_current_time", "arguments": {"timezone": "UTC"}}
            )
            assert not direct_name.is_error
            denied = await client.call_tool(
                "mcp", {"action": "call", "tool": "time__convert_time", "arguments": {"time": "12:00"}}
            )
            assert error_of(denied)["code"] == "unknown_tool"  # not offered, under either name

            connectors = await client.call_tool("mcp", {"action": "connectors"})
            assert connectors.structured_content == {
                "connectors": [{"name": "clock", "tools": 2}, {"name": "time", "tools": 1}]
            }

            malformed = await client.call_tool("mcp", {"action": "run", "tool": "x"})
            assert error_of(malformed)["code"] == "validation_error"
            assert '"action": "search"' in malformed.content[0].text  # type: ignore[union-attr]

            asked = await client.call_tool(
                "mcp", {"action": "call", "tool": "mcp.clock.get_current_time", "arguments": {"timezone": "UTC"}}
            )
            assert error_of(asked)["code"] == "approval_unavailable"

    events = session_events(run)
    assert [e["type"] for e in events if e["payload"].get("toolCallId") == "tc_1"] == CALL_CHAIN
    assert [e["type"] for e in events if e["payload"].get("toolCallId") == "tc_2"] == CALL_CHAIN
    types = [e["type"] for e in events]
    # search and describe read the cached catalogs: no server started before the first call
    assert types.index("model.tool_call_requested") < types.index("mcp.server.connected")


@pytest.mark.usefixtures("governed_home")
async def test_auto_mode_offers_direct_tools_for_a_small_catalog(home: Path, workspace: Path) -> None:
    with anyio.fail_after(60):
        async with gateway(home, workspace, "auto") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == {"time__get_current_time", "clock__get_current_time", "clock__convert_time"}


@pytest.mark.usefixtures("governed_home")
async def test_sigterm_stops_the_gateway_and_the_servers_it_started(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
        },
    ]
    args = ["--home", str(home), "gateway", "--stdio", "--project", str(workspace), "--mode", "direct"]
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [PATCHBAY, *args], env={"PATH": os.environ["PATH"], "PATCHBAY_BUILTINS": "off"}
        ) as process:
            assert process.stdin is not None and process.stdout is not None
            for message in messages:
                await process.stdin.send((json.dumps(message) + "\n").encode())
            received = b""
            while b'"id":2' not in received.replace(b" ", b""):
                received += await process.stdout.receive()
            servers = psutil.Process(process.pid).children(recursive=True)
            assert servers  # the time server it started for the call
            process.terminate()
            assert await process.wait() == 130  # stopped as Ctrl-C stops it, without waiting for stdin
            assert process.stderr is not None
            said = b""
            with contextlib.suppress(anyio.EndOfStream):
                while True:
                    said += await process.stderr.receive()
            assert said.decode().rstrip().endswith("patchbay gateway: stopped") and b"error[" not in said
    _, alive = psutil.wait_procs(servers, timeout=10)
    assert alive == []
    assert CALL_CHAIN == [e["type"] for e in session_events(run) if e["payload"].get("toolCallId") == "tc_1"]


@pytest.fixture
def dynamic_home(run: Callable[..., Any], workspace: Path) -> None:
    """``dyn``: a server whose tool list changes on request, every tool allowed."""
    run("connector", "add", "dyn", "--", sys.executable, str(FIXTURES / "dynamic_server.py"))
    run("connector", "set", "dyn", "--approval-mode", "allow_all")
    run("probe", "dyn", "--project", str(workspace))


@pytest.mark.usefixtures("dynamic_home")
async def test_a_servers_list_changed_reaches_the_host_and_the_new_tool_is_listed(home: Path, workspace: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    client = gateway(home, workspace, "direct")
    client.message_handler = on_message
    client.mode = "legacy"
    with anyio.fail_after(60):
        async with client:
            tools_capability = client.server_capabilities.tools
            assert tools_capability is not None and tools_capability.list_changed
            before = {tool.name for tool in (await client.list_tools()).tools}
            assert "dyn__add_tool" in before and "dyn__fresh" not in before
            added = await client.call_tool("dyn__add_tool", {"name": "fresh"})
            assert not added.is_error
            await changed.wait()
            after = {tool.name for tool in (await client.list_tools()).tools}
            assert "dyn__fresh" in after
            fresh = await client.call_tool("dyn__fresh", {})
            assert "dynamic:fresh" in fresh.content[0].text  # type: ignore[union-attr]


@pytest.mark.usefixtures("governed_home")
async def test_a_grant_changed_while_the_gateway_runs_reaches_the_host_as_list_changed(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    """``patchbay grant`` is another process: the gateway sees the store's change counter move,
    reloads its runtime (same event-log session) and tells the host; the next list reflects it."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    client = gateway(home, workspace, "direct")
    assert isinstance(client.server, StdioServerParameters) and client.server.env is not None
    client.server.env["PATCHBAY_GATEWAY_RELOAD_POLL"] = "0.2"
    client.message_handler = on_message
    client.mode = "legacy"
    with anyio.fail_after(60):
        async with client:
            before = {tool.name for tool in (await client.list_tools()).tools}
            assert "clock__get_current_time" in before
            asked = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            assert error_of(asked)["code"] == "approval_unavailable"
            run("grant", "clock", "get_current_time", "allow")
            await changed.wait()
            allowed = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
            assert not allowed.is_error
            assert len((await client.list_tools()).tools) == 3  # listed again: told of the next change
            changed = anyio.Event()
            run("grant", "clock", "convert_time", "deny")
            await changed.wait()
            after = {tool.name for tool in (await client.list_tools()).tools}
            assert after == {"time__get_current_time", "clock__get_current_time"}
    events = session_events(run)  # one session across both reloads
    completed = [e for e in events if e["type"] == "mcp.call.completed"]
    assert len(completed) == 1


@pytest.fixture
def resources_home(run: Callable[..., Any], workspace: Path, tmp_path: Path) -> None:
    """``res``: the recording resources/prompts fixture; resource reads allowed, prompt ``broken`` denied."""
    fixture = str(FIXTURES / "resources_server.py")
    run("connector", "add", "res", "--", sys.executable, fixture, "--record", str(tmp_path / "requests.jsonl"))
    run("probe", "res", "--project", str(workspace))
    run("grant", "res", "--resources", "allow")
    run("grant", "res", "--prompt", "broken", "deny")


@pytest.mark.usefixtures("resources_home")
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_resources_and_prompts_are_re_exposed_under_namespaced_names_on_the_governed_path(
    home: Path, workspace: Path, run: Callable[..., Any], era: str
) -> None:
    from mcp.shared.exceptions import MCPError

    client = gateway(home, workspace, "direct")
    client.mode = era  # type: ignore[assignment]
    with anyio.fail_after(60):
        async with client:
            assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
            capabilities = client.server_capabilities
            assert capabilities.resources is not None and capabilities.prompts is not None
            resources = (await client.list_resources()).resources
            assert len(resources) == 50  # every page of the server's list
            doc = next(r for r in resources if r.uri == "patchbay://res/fixture%3A%2F%2Fdoc%2F5")
            assert doc.name == "res__doc-5" and doc.mime_type == "text/plain"
            read = await client.read_resource(doc.uri)
            assert [(c.uri, c.text) for c in read.contents] == [(doc.uri, "Document 5")]  # type: ignore[union-attr]

            templates = (await client.list_resource_templates()).resource_templates
            item = next(t for t in templates if t.name == "res__item")
            assert item.uri_template == "patchbay://res/fixture%3A%2F%2Fitem%2F{id}"
            expanded = await client.read_resource(item.uri_template.replace("{id}", "42"))
            assert expanded.contents[0].text == "item 42"  # type: ignore[union-attr]

            with pytest.raises(MCPError) as bad:
                await client.read_resource("fixture://doc/5")  # the server's own URI is not the gateway's
            assert bad.value.error.data == {"code": "validation_error"}

            prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
            assert {"res__greet", "res__review", "res__plain"} <= set(prompts) and "res__broken" not in prompts
            assert [(a.name, a.required) for a in prompts["res__greet"].arguments or []] == [
                ("name", True),
                ("style", False),
            ]
            greeting = await client.get_prompt("res__greet", {"name": "Ada"})
            assert {message.role for message in greeting.messages} == {"user"}
            assert "greet name='Ada'" in greeting.messages[0].content.text  # type: ignore[union-attr]
            with pytest.raises(MCPError) as missing:
                await client.get_prompt("res__greet", {})
            assert missing.value.error.data == {"code": "validation_error"}
            with pytest.raises(MCPError) as denied:
                await client.get_prompt("res__broken", {})
            assert denied.value.error.data == {"code": "permission_denied"}
    types_seen = {event["type"] for event in session_events(run)}
    assert {"mcp.resource.requested", "mcp.resource.fetched", "mcp.prompt.invoked", "mcp.prompt.expanded"} <= types_seen


@pytest.fixture
def everything_home(run: Callable[..., Any], workspace: Path) -> None:
    """server-everything (npm peer) with its long-running operation allowed."""
    run("connector", "add", "everything", "--", *everything_stdio_command())
    run("probe", "everything", "--project", str(workspace))
    run("grant", "everything", "trigger-long-running-operation", "allow")


@pytest.mark.peers
@pytest.mark.usefixtures("everything_home")
async def test_upstream_progress_reaches_the_host_and_a_host_cancellation_ends_the_call_cancelled(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    tool = "everything__trigger-long-running-operation"
    seen: list[tuple[float, float | None]] = []
    first = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))
        first.set()

    with anyio.fail_after(120):
        async with gateway(home, workspace, "direct") as client:
            done = await client.call_tool(tool, {"duration": 1, "steps": 4}, progress_callback=on_progress)
            assert not done.is_error
            assert [p for p, _ in seen] == [1, 2, 3, 4] and {t for _, t in seen} == {4}
            # a long one, cancelled by the host once the first progress arrived
            seen.clear()
            first = anyio.Event()
            async with anyio.create_task_group() as group:

                async def long_call() -> None:
                    await client.call_tool(tool, {"duration": 600, "steps": 600}, progress_callback=on_progress)

                group.start_soon(long_call)
                await first.wait()
                group.cancel_scope.cancel()
            # the gateway still answers: the cancellation ended one call, not the session
            again = await client.call_tool(tool, {"duration": 1, "steps": 1})
            assert not again.is_error
    failed = [e["payload"] for e in session_events(run) if e["type"] == "tool.failed"]
    assert [p.get("reason") for p in failed] == ["cancelled"]


@pytest.mark.usefixtures("governed_home")
async def test_an_ask_call_waits_for_the_settings_page_of_the_running_serve_and_its_answer(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PATCHBAY_BUILTINS": "off"}
    messages: list[str] = []
    reported = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        reported.set()

    with serve_process(home, workspace, env=env) as served, anyio.fail_after(120):
        async with httpx2.AsyncClient(headers=served.headers, timeout=30) as page:
            # a call waits (up to 600 s here) while the host is told where the approval is
            async with gateway(
                home,
                workspace,
                "direct",
                env={"PATCHBAY_GATEWAY_APPROVAL_WAIT": "600", "PATCHBAY_APPROVAL_RECHECK": "0.1"},
            ) as client:
                results: list[Any] = []

                async def call() -> None:
                    arguments = {"timezone": "UTC"}
                    results.append(
                        await client.call_tool("clock__get_current_time", arguments, progress_callback=on_progress)
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    await reported.wait()
                    found = re.search(r"(http://\S+)/ui#approval-(apr_[0-9a-f]+)", messages[0])
                    assert found is not None and found[1] == served.url, messages
                    listed = (await page.get(f"{served.url}/api/approvals")).json()["approvals"]
                    assert [(a["id"], a["name"]) for a in listed] == [(found[2], "mcp.clock.get_current_time")]
                    answered = await page.post(
                        f"{served.url}/api/approvals/{found[2]}", json={"answer": "allow_session"}
                    )
                    assert answered.status_code == 200, answered.text
                [result] = results
                assert not result.is_error and "UTC" in result.content[0].text
                again = await client.call_tool("clock__get_current_time", {"timezone": "Asia/Tokyo"})
                assert not again.is_error  # allowed for the rest of the session: not asked again

            # a host that would time out: the call ends approval_pending, the approval stays open,
            # and the identical call made again once it is allowed proceeds
            async with gateway(home, workspace, "direct", env={"PATCHBAY_GATEWAY_APPROVAL_WAIT": "0.05"}) as client:
                asked = await client.call_tool("clock__convert_time", CONVERT)
                error = error_of(asked)
                assert error["code"] == "approval_pending"
                assert error["approvalUrl"] == f"{served.url}/ui#approval-{error['approvalId']}"
                listed = (await page.get(f"{served.url}/api/approvals")).json()["approvals"]
                assert [a["id"] for a in listed] == [error["approvalId"]]
                answered = await page.post(
                    f"{served.url}/api/approvals/{error['approvalId']}", json={"answer": "allow_once"}
                )
                assert answered.status_code == 200, answered.text
                converted = await client.call_tool("clock__convert_time", CONVERT)
                assert not converted.is_error
                left_open = await client.call_tool("clock__convert_time", {**CONVERT, "time": "13:00"})
                assert error_of(left_open)["code"] == "approval_pending"
            # the gateway stopped: nobody will make that call again, so its approval went with it
            assert (await page.get(f"{served.url}/api/approvals")).json()["approvals"] == []


CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


@pytest.fixture
def eliciting_home(run: Callable[..., Any], workspace: Path) -> None:
    """server-everything (npm peer) with its form and URL elicitation tools allowed (the gateway's
    runtime advertises elicitation, so the server offers them)."""
    run("connector", "add", "everything", "--", *everything_stdio_command())
    run("probe", "everything", "--project", str(workspace))
    # the probe does not advertise elicitation, so its catalog lacks the tools the server offers
    # only to a client that does (the gateway's runtime): granted ahead of the catalog
    run("grant", "everything", "trigger-elicitation-request", "allow", "--unknown-ok")
    run("grant", "everything", "trigger-url-elicitation", "allow", "--unknown-ok")
    run("grant", "everything", "trigger-long-running-operation", "allow")


ELICITING_TOOL = "everything__trigger-elicitation-request"


def result_text(result: types.CallToolResult) -> str:
    assert not result.is_error
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.peers
@pytest.mark.usefixtures("eliciting_home")
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_an_upstream_elicitation_reaches_a_host_that_declares_it_and_its_answer_goes_back(
    home: Path, workspace: Path, run: Callable[..., Any], era: str
) -> None:
    """A 2025-11-25 host is asked with ``elicitation/create`` on its call; a 2026-07-28 host gets
    an ``InputRequiredResult`` and retries the call with its answer."""
    asked: list[types.ElicitRequestParams] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True, "integer": 7})

    async def broken(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise RuntimeError("the host's dialog crashed")

    with anyio.fail_after(120):
        async with gateway(home, workspace, "direct", era=era, elicitation_callback=on_elicit) as client:
            assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
            assert ELICITING_TOOL in {t.name for t in (await client.list_tools()).tools}
            text = result_text(await client.call_tool(ELICITING_TOOL, {}))
            link = {"url": "https://login.example.test/start", "elicitationId": "el-1", "message": "Sign in"}
            visited = result_text(await client.call_tool("everything__trigger-url-elicitation", link))
            # upstream progress still reaches this host (on a 2026-07-28 host: its waiting round)
            steps: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                steps.append(progress)

            long = {"duration": 1, "steps": 2}
            await client.call_tool("everything__trigger-long-running-operation", long, progress_callback=on_progress)
        # a 2025-11-25 host whose answer fails: the server's call goes on, declined
        async with gateway(home, workspace, "direct", era="legacy", elicitation_callback=broken) as client:
            failed = result_text(await client.call_tool(ELICITING_TOOL, {}))
    assert len(asked) == 2 and isinstance(asked[0], types.ElicitRequestFormParams)
    assert asked[0].message == "Please provide inputs for the following fields:"
    assert asked[0].requested_schema["required"] == ["name"]
    assert "name" in asked[0].requested_schema["properties"]
    assert "User provided the requested information" in text
    assert "- Name: Ada Lovelace" in text and "- Favorite Integer: 7" in text
    url = asked[1]
    assert isinstance(url, types.ElicitRequestURLParams)
    assert (url.url, url.message) == ("https://login.example.test/start", "Sign in")
    assert url.elicitation_id == ("el-1" if era == "legacy" else None)  # not in the 2026-07-28 wire form
    assert "User cancelled the URL elicitation (Elicitation ID: el-1)" in visited
    assert steps == [1, 2]
    assert '"action": "decline"' in failed  # the host answered with an error: declined
    completed = []  # every call completed on the governed path: three in one gateway, one in the other
    for session in json.loads(run("sessions", "--json").stdout)["sessions"]:
        events = json.loads(run("events", session["session_id"], "--json").stdout)["events"]
        completed.append([e["type"] for e in events].count("tool.completed"))
    assert sorted(completed) == [1, 3]


@pytest.mark.peers
@pytest.mark.usefixtures("eliciting_home")
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_an_upstream_elicitation_is_declined_for_a_host_without_the_capability(
    home: Path, workspace: Path, era: str
) -> None:
    with anyio.fail_after(120):
        async with gateway(home, workspace, "direct", era=era) as client:  # no elicitation declared
            assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
            text = result_text(await client.call_tool(ELICITING_TOOL, {}))
    assert "User declined to provide the requested information" in text
    assert '"action": "decline"' in text


@pytest.fixture
def asking_home(run: Callable[..., Any], workspace: Path) -> None:
    """tests/fixtures/eliciting_server.py as ``asker``, its ``ask`` and ``ask_then_hang`` allowed."""
    run("connector", "add", "asker", "--", sys.executable, str(FIXTURES / "eliciting_server.py"))
    run("probe", "asker", "--project", str(workspace))
    run("grant", "asker", "ask", "allow")
    run("grant", "asker", "ask_then_hang", "allow")


@pytest.mark.usefixtures("asking_home")
async def test_a_2026_host_drives_the_input_rounds_of_a_call_and_a_stale_state_is_refused(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    """The rounds by hand (``allow_input_required``): the upstream question as an
    ``InputRequiredResult``, a retry with a state that names no waiting call refused, the retry
    with the answer completing the one governed call."""

    async def unused(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("this host answers the rounds itself")

    answer = {"elicitation-1": types.ElicitResult(action="accept", content={"answer": "because"})}
    with anyio.fail_after(60):
        async with gateway(home, workspace, "direct", elicitation_callback=unused) as client:
            assert client.protocol_version == "2026-07-28"
            session = client.session
            first = await session.call_tool("asker__ask", {"question": "Why?"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.request_state
            assert first.input_requests is not None and list(first.input_requests) == ["elicitation-1"]
            asked = first.input_requests["elicitation-1"]
            assert isinstance(asked, types.ElicitRequest) and asked.params.message == "Why?"
            assert isinstance(asked.params, types.ElicitRequestFormParams)
            assert asked.params.requested_schema["required"] == ["answer"]

            stale = await session.call_tool(
                "asker__ask",
                {"question": "Why?"},
                input_responses=answer,
                request_state="nope",
                allow_input_required=True,
            )
            assert isinstance(stale, types.CallToolResult) and error_of(stale)["code"] == "validation_error"

            done = await session.call_tool(
                "asker__ask",
                {"question": "Why?"},
                input_responses=answer,
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert isinstance(done, types.CallToolResult) and not done.is_error
            assert done.content[0].text == "accept: because"  # type: ignore[union-attr]
            finished = await session.call_tool(
                "asker__ask",
                {"question": "Why?"},
                input_responses=answer,
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert isinstance(finished, types.CallToolResult) and error_of(finished)["code"] == "validation_error"
    events = session_events(run)
    assert [e["type"] for e in events].count("tool.completed") == 1  # one governed call across the rounds
    assert [e["type"] for e in events].count("model.tool_call_requested") == 1


@pytest.mark.usefixtures("asking_home")
async def test_a_2026_host_cancelling_a_round_cancels_the_governed_call(
    home: Path, workspace: Path, run: Callable[..., Any]
) -> None:
    async def unused(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("this host answers the rounds itself")

    answer = {"elicitation-1": types.ElicitResult(action="accept", content={"answer": "yes"})}
    progressed = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progressed.set()

    tool, arguments = "asker__ask_then_hang", {"question": "Go on?"}
    with anyio.fail_after(60):
        async with gateway(home, workspace, "direct", elicitation_callback=unused) as client:
            session = client.session
            first = await session.call_tool(tool, arguments, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            async with anyio.create_task_group() as group:

                async def retry() -> None:
                    await session.call_tool(
                        tool,
                        arguments,
                        progress_callback=on_progress,
                        input_responses=answer,
                        request_state=first.request_state,
                        allow_input_required=True,
                    )

                group.start_soon(retry)
                await progressed.wait()  # the answer reached the server; the round waits for the end
                group.cancel_scope.cancel()
            # the governed call (hanging upstream) ends cancelled while the gateway still runs
            await wait_until(lambda: "tool.failed" in [e["type"] for e in logged_events(home)])
    failed = [e["payload"] for e in session_events(run) if e["type"] == "tool.failed"]
    assert [p.get("reason") for p in failed] == ["cancelled"]
