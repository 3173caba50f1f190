"""The runtime's connections behind the egress guard, and their audit lines (seed 003 §14.2):
``mcp_connect`` per connect attempt and ``mcp_tool_call`` per call, metadata only; stdio and socket
connectors are recorded as ``runtime_call_audit: "unavailable"``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings, HttpTarget, StdioTarget
from patchbay.runtime.connection.server_connection import ServerConnection
from tests.support.egress import AUDIT_KEYS, audit_lines, http_fixture, http_response, listening, recorded_requests
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.anyio

ARGUMENT = "arg-cnry-4669"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def remote(url: str, **options: Any) -> RuntimeServer:
    return RuntimeServer(
        connector_id="id-remote",
        name="remote",
        target=HttpTarget(url=url),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config=options,
    )


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="prj_runtime", workspace=str(tmp_path), servers=servers)


@pytest.mark.parametrize("options", [{}, {"allow_private": False}, {"allow_private": "yes"}, {"allow_private": 1}])
async def test_a_remote_connector_on_loopback_is_blocked_unless_it_allows_private(
    tmp_path: Path, settings: Settings, options: dict[str, Any]
) -> None:
    async with listening() as listener:
        server = remote(f"{listener.origin}/mcp", **options)
        with anyio.fail_after(20):
            async with Runtime(config(tmp_path, server), settings=settings) as runtime:
                with pytest.raises(ToolCallError) as info:
                    await runtime.call("mcp.remote.echo", {"text": ARGUMENT})
        assert listener.connections == 0
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert info.value.details["code"] == "network_blocked"
    (line,) = audit_lines(settings.home)
    assert set(line) == AUDIT_KEYS
    assert (line["note"], line["origin"], line["approved"]) == ("mcp_connect", listener.origin, False)


async def test_connect_and_every_call_leave_one_metadata_only_line(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port:
        server = remote(f"http://127.0.0.1:{port}/mcp?key=qry-cnry-7", allow_private=True)
        with anyio.fail_after(30):
            async with Runtime(config(tmp_path, server), settings=settings) as runtime:
                for _ in range(2):
                    assert (await runtime.call("mcp.remote.echo", {"text": ARGUMENT})).text == ARGUMENT
    assert recorded_requests(record)
    lines = audit_lines(settings.home)
    assert [(line["note"], line["approved"]) for line in lines] == [
        ("mcp_connect", True),
        ("mcp_tool_call", True),
        ("mcp_tool_call", True),
    ]
    assert all(set(line) == AUDIT_KEYS for line in lines)
    assert {(line["connector_id"], line["origin"]) for line in lines} == {("id-remote", f"http://127.0.0.1:{port}")}
    text = (settings.home / "egress-audit.jsonl").read_text()
    for leak in (ARGUMENT, "qry-cnry-7", "key=", "/mcp", "echo"):
        assert leak not in text


async def test_stdio_connectors_are_recorded_as_unguardable(tmp_path: Path, settings: Settings) -> None:
    server = RuntimeServer(
        connector_id="id-local",
        name="local",
        target=StdioTarget(command=sys.executable, args=(str(FIXTURES / "recording_server.py"),)),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            assert (await runtime.call("mcp.local.echo", {"text": ARGUMENT})).text == ARGUMENT
    lines = audit_lines(settings.home)
    assert [line["note"] for line in lines] == ["mcp_connect", "mcp_tool_call"]
    for line in lines:
        assert (line["origin"], line["runtime_call_audit"], line["approved"]) == (None, "unavailable", True)
    assert ARGUMENT not in (settings.home / "egress-audit.jsonl").read_text()


async def test_a_connection_names_its_project_in_every_line(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port, anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            connection = ServerConnection(
                remote(f"http://127.0.0.1:{port}/mcp", allow_private=True),
                workspace=tmp_path,
                settings=settings,
                task_group=group,
                project_id="prj_named",
            )
            await connection.ensure_connected()
            result = await connection.call_tool("echo", {"text": ARGUMENT})
            assert result.content[0].text == ARGUMENT  # type: ignore[union-attr]
            connection.request_stop()
            await connection.wait_closed()
    assert [(line["note"], line["project_id"]) for line in audit_lines(settings.home)] == [
        ("mcp_connect", "prj_named"),
        ("mcp_tool_call", "prj_named"),
    ]


async def test_a_cross_origin_sse_endpoint_is_network_blocked_naming_the_origin(
    tmp_path: Path, settings: Settings
) -> None:
    async with listening() as elsewhere:
        body = f"event: endpoint\ndata: {elsewhere.origin}/messages\n\n".encode()
        answer = http_response(200, body, {"Content-Type": "text/event-stream"})
        async with listening(lambda method, path: answer) as sse:
            server = remote(f"{sse.origin}/sse", allow_private=True).model_copy(
                update={"target": HttpTarget(url=f"{sse.origin}/sse", transport="sse")}
            )
            with anyio.fail_after(20):
                async with Runtime(config(tmp_path, server), settings=settings) as runtime:
                    with pytest.raises(ToolCallError) as info:
                        await runtime.call("mcp.remote.echo", {"text": ARGUMENT})
        assert elsewhere.connections == 0
    assert info.value.details["code"] == "network_blocked"
    assert elsewhere.origin in info.value.message
