"""The governed call path applies the outputSchema rules end to end, against the real stdio fixture
tests/fixtures/schema_server.py: over-bound tools never reach the router, an ``isError`` result is a
``tool_error`` whatever its structuredContent, and a successful result that violates the
outputSchema fails with ``tool_error`` naming the tool and the JSON path.

Needs ServerConnection (src/patchbay/runtime/connection/server_connection.py) to turn the SDK's own check off and
call :func:`patchbay.runtime.output.schema_check.check_tool_result` on every result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings
from patchbay.runtime import read_events
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


def runtime_for(tmp_path: Path) -> Runtime:
    server = RuntimeServer(
        connector_id="con_schema",
        name="schema",
        target=fixture_server("schema_server.py"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    config = RuntimeConfig(project_id="prj_test", workspace=str(tmp_path), servers=(server,))
    return Runtime(config, settings=Settings(home=tmp_path / "home"), session_id="ses_schema")


async def outcome(runtime: Runtime, tool: str) -> Any:
    try:
        return await runtime.call(f"mcp.schema.{tool}", {})
    except ToolCallError as exc:
        return exc


async def test_schema_rules_on_the_governed_call_path(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path) as runtime:
            names = [tool.name for tool in await runtime.list_tools()]
            results = {
                tool: await outcome(runtime, tool)
                for tool in ("count_ok", "count_error", "count_wrong", "count_missing", "bad_output_schema")
            }
        events = read_events(runtime.event_log_path)

    # Over-bound tools are not offered at all; the others are.
    assert names == [
        f"mcp.schema.{tool}"
        for tool in ("echo", "bad_output_schema", "count_error", "count_wrong", "count_ok", "count_missing")
    ]

    assert results["count_ok"].structured_content == {"count": 3}

    error = results["count_error"]
    assert isinstance(error, ToolCallError) and error.reason is FailureReason.TOOL_ERROR
    assert error.result.structured_content == {"count": "many"}  # type: ignore[attr-defined]
    assert "counting failed" in error.message

    wrong = results["count_wrong"]
    assert isinstance(wrong, ToolCallError) and wrong.reason is FailureReason.TOOL_ERROR
    assert wrong.message == (
        "schema: 'count_wrong' returned structuredContent that does not match its outputSchema at $.count: "
        "'many' is not of type 'integer'"
    )
    assert (wrong.details["problem"], wrong.details["jsonPath"]) == ("output_schema_mismatch", "$.count")

    missing = results["count_missing"]
    assert isinstance(missing, ToolCallError) and missing.details["problem"] == "structured_content_missing"
    invalid = results["bad_output_schema"]
    assert isinstance(invalid, ToolCallError) and invalid.details["problem"] == "output_schema_invalid"

    failed = [event["payload"] for event in events if event["type"] == "mcp.call.failed"]
    assert [event["reason"] for event in failed] == ["tool_error"] * 4
    assert any("$.count" in event["error"] for event in failed)
    assert [event["type"] for event in events].count("tool.completed") == 1
