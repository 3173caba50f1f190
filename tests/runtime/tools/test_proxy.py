"""The ``mcp`` proxy tool: search, describe and call, against the real
``@modelcontextprotocol/server-everything`` and tests/fixtures/ref_schema_server.py."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from patchbay import ToolCallError
from patchbay.core.errors import FailureReason, ValidationError
from patchbay.runtime import read_events
from tests.support.events import CALL_CHAIN
from tests.support.tools import everything, name_of, refs, runtime_for

pytestmark = pytest.mark.anyio


async def test_the_proxy_searches_describes_and_calls_server_everything(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, everything()) as runtime:
            found = await runtime.call_wire("mcp", {"action": "search", "query": "sum of two numbers"})
            assert found.structured_content is not None
            assert found.structured_content["tools"][0] == {
                "name": "mcp__everything__get-sum",
                "description": "Returns the sum of two numbers",
            }
            assert json.loads(found.text) == found.structured_content
            described = await runtime.call_wire("mcp", {"action": "describe", "tool": "mcp__everything__get-sum"})
            assert described.structured_content is not None
            assert described.structured_content["canonicalName"] == "mcp.everything.get-sum"
            assert described.structured_content["inputSchema"]["required"] == ["a", "b"]
            result = await runtime.call_wire(
                "mcp", {"action": "call", "tool": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3}}
            )
            assert result.name == "mcp.everything.get-sum" and "5" in result.text


async def test_proxy_search_is_ranked_deterministic_and_bounded(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            tree = await runtime.call_proxy({"action": "search", "query": "tree nodes"})
            everything_listed = await runtime.call_proxy({"action": "search", "query": ""})
            limited = await runtime.call_proxy({"action": "search", "query": "", "limit": 3})
            again = await runtime.call_proxy({"action": "search", "query": "tree nodes"})
            nothing = await runtime.call_proxy({"action": "search", "query": "zebra"})
            described = await runtime.call_proxy({"action": "describe", "tool": "mcp.refs.make_tree"})
    assert tree.structured_content == again.structured_content
    assert tree.structured_content is not None
    assert tree.structured_content["tools"][0] == {
        "name": "mcp__refs__make_tree",
        "description": "Count the nodes of a tree.",
    }
    listed = everything_listed.structured_content
    assert listed is not None and listed["total"] == 11 and len(listed["tools"]) == 10
    names = [t["name"] for t in listed["tools"]]
    assert names == sorted(names)
    assert limited.structured_content is not None and len(limited.structured_content["tools"]) == 3
    assert nothing.structured_content == {"query": "zebra", "total": 0, "tools": []}
    assert (tree.tool_call_id, tree.name) == ("", "mcp")
    assert described.structured_content is not None
    assert described.structured_content["name"] == "mcp__refs__make_tree"
    assert "$defs" in described.structured_content["inputSchema"]  # the server's own schema
    # search and describe read the catalog only: no tool call was logged.
    assert not any(e["type"] == "model.tool_call_requested" for e in read_events(runtime.event_log_path))


async def test_a_proxy_call_goes_through_the_governed_path(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            result = await runtime.call_wire(
                "mcp", {"action": "call", "tool": "mcp__refs__echo", "arguments": {"text": "via proxy"}}
            )
            as_text = await runtime.call_wire(
                "mcp", {"action": "call", "tool": "mcp.refs.echo", "arguments": '{"text": "json text"}'}
            )
    assert (result.text, result.name) == ("via proxy", "mcp.refs.echo")
    assert as_text.text == "json text"
    events = read_events(runtime.event_log_path)
    chain = [e["type"] for e in events if e["type"] not in ("mcp.server.connected", "mcp.server.shutdown")]
    assert chain == CALL_CHAIN + CALL_CHAIN
    requested = [e["payload"] for e in events if e["type"] == "model.tool_call_requested"]
    assert requested == [
        {"tool": "mcp.refs.echo", "args": {"text": "via proxy"}, "toolCallId": "tc_1"},
        {"tool": "mcp.refs.echo", "args": {"text": "json text"}, "toolCallId": "tc_2"},
    ]


async def test_a_denied_tool_stays_denied_through_the_proxy(tmp_path: Path) -> None:
    server = refs(global_grants={"echo": "deny"})
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, server) as runtime:
            direct = await runtime.tool_definitions("anthropic")
            found = await runtime.call_proxy({"action": "search", "query": "echo text"})
            with pytest.raises(ToolCallError) as describe:
                await runtime.call_proxy({"action": "describe", "tool": "mcp__refs__echo"})
            with pytest.raises(ToolCallError) as call:
                await runtime.call_wire(
                    "mcp", {"action": "call", "tool": "mcp__refs__echo", "arguments": {"text": "let me"}}
                )
            with pytest.raises(ToolCallError) as wire:
                await runtime.call_wire("mcp__refs__echo", {"text": "let me"})
    assert "mcp__refs__echo" not in {name_of(d) for d in direct}
    assert found.structured_content is not None
    assert "mcp__refs__echo" not in [t["name"] for t in found.structured_content["tools"]]
    assert describe.value.reason is FailureReason.PERMISSION_DENIED
    assert call.value.reason is FailureReason.PERMISSION_DENIED
    assert wire.value.reason is FailureReason.PERMISSION_DENIED
    events = read_events(runtime.event_log_path)
    resolved = [e["payload"] for e in events if e["type"] == "permission.resolved"]
    assert [(p["tool"], p["decision"]) for p in resolved] == [("mcp.refs.echo", "deny")] * 2
    assert not any(e["type"] == "mcp.call.started" for e in events)  # the server never saw it


async def test_bad_proxy_arguments_are_refused_with_the_field_named(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            cases = [
                ({"action": "explode"}, "action"),
                ({"action": "call"}, "tool"),
                ({"action": "search", "limit": 500}, "limit"),
                ({"action": "search", "limit": True}, "limit"),
                ({"action": "call", "tool": "mcp__refs__echo", "arguments": "[1, 2]"}, "arguments"),
                ({"action": "search", "sneaky": 1}, "sneaky"),
                (["search"], "arguments"),
            ]
            for arguments, field in cases:
                with pytest.raises(ValidationError) as refused:
                    await runtime.call_wire("mcp", arguments)  # type: ignore[arg-type]
                assert refused.value.details == {"field": field}, arguments
            with pytest.raises(ToolCallError) as unknown:
                await runtime.call_proxy({"action": "describe", "tool": "mcp__refs__nope"})
    assert unknown.value.reason is FailureReason.UNKNOWN_TOOL
    assert not any(e["type"] == "mcp.call.started" for e in read_events(runtime.event_log_path))


async def test_a_local_tool_named_mcp_keeps_its_name_and_the_proxy_says_so(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, local_tools={"mcp": lambda: "local one"}) as runtime:
            proxy = await runtime.tool_definitions("proxy")
            local = await runtime.call_wire("mcp", {})
            listed = await runtime.call_proxy({"action": "search", "query": ""})
            direct = await runtime.tool_definitions("anthropic")
    assert local.text == "local one"
    assert [d.to_dict()["tool"] for d in proxy.diagnostics] == ["mcp"]
    assert listed.structured_content == {"query": "", "total": 0, "tools": []}  # local tools are the host's own
    assert list(direct) == [{"name": "mcp", "description": "", "input_schema": {"type": "object", "properties": {}}}]
