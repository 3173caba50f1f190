"""Tool definitions for model APIs, direct or one ``mcp`` proxy definition (the default), against
the real ``@modelcontextprotocol/server-everything`` and tests/fixtures/ref_schema_server.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from patchbay import RuntimeServer, ToolCallError
from patchbay.core.errors import FailureReason, ValidationError
from patchbay.core.models import ConnectorSettings
from patchbay.runtime import read_events
from patchbay.runtime.tools.definitions import ToolDefinitions, compact_size
from patchbay.runtime.tools.proxy import PROXY_TOOL_NAME
from tests.support.events import CALL_CHAIN
from tests.support.servers import fixture_server
from tests.support.tools import everything, name_of, refs, runtime_for

pytestmark = pytest.mark.anyio

WIRE = re.compile(r"[A-Za-z0-9_-]{1,64}")
LONG_TOOL = "summarise_quarterly_financial_statements_for_the_board_of_directors_in_full_detail"
LEFT_OUT = {"remote_ref", "dangling_ref", "fan_out", "bad_type", "no_object"}
EVERYTHING_TOOLS = 13
"""server-everything lists 13 tools to a client that sets no sampling/elicitation/roots callback."""


def schema_of(definition: dict[str, Any]) -> dict[str, Any]:
    for key in ("input_schema", "parameters", "inputSchema"):
        if key in definition:
            return definition[key]
    return definition["function"]["parameters"]


def by_name(definitions: ToolDefinitions) -> dict[str, dict[str, Any]]:
    return {name_of(d): d for d in definitions}


# -- server-everything ----------------------------------------------------------------------------


async def test_each_format_has_its_api_shape_for_server_everything(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, everything()) as runtime:
            anthropic = await runtime.tool_definitions("anthropic")
            default = await runtime.tool_definitions()
            openai = await runtime.tool_definitions("openai")
            responses = await runtime.tool_definitions("openai-responses")
            mcp = await runtime.tool_definitions("mcp")
            live = {tool.wire_name: tool for tool in await runtime.list_tools()}

    assert default == anthropic
    for result in (anthropic, openai, responses, mcp):
        assert len(result) == EVERYTHING_TOOLS and result.diagnostics == []
        names = [name_of(d) for d in result]
        assert len(set(names)) == EVERYTHING_TOOLS and all(WIRE.fullmatch(n) for n in names)
        assert set(names) == set(live)

    for definition in anthropic:
        assert set(definition) == {"name", "description", "input_schema"}
    for definition in openai:
        assert set(definition) == {"type", "function"} and definition["type"] == "function"
        assert set(definition["function"]) == {"name", "description", "parameters"}
    for definition in responses:
        assert set(definition) == {"type", "name", "description", "parameters", "strict"}
        assert definition["strict"] is False
    for result in (anthropic, openai, responses):
        for definition in result:
            schema = schema_of(definition)
            assert schema["type"] == "object" and "$schema" not in schema
            Draft202012Validator.check_schema(schema)

    assert by_name(anthropic)["mcp__everything__echo"] == {
        "name": "mcp__everything__echo",
        "description": "Echoes back the input string",
        "input_schema": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Message to echo"}},
            "required": ["message"],
        },
    }
    assert by_name(openai)["mcp__everything__get-sum"]["function"]["parameters"]["required"] == ["a", "b"]

    # The MCP Tool shape keeps the server's own schemas, title, outputSchema and annotations.
    structured = by_name(mcp)["mcp__everything__get-structured-content"]
    tool = live["mcp__everything__get-structured-content"]
    assert structured == {
        "name": "mcp__everything__get-structured-content",
        "title": "Get Structured Content Tool",
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
    }
    assert all("outputSchema" not in d for n, d in by_name(mcp).items() if n != structured["name"])


async def test_the_proxy_definition_is_smaller_than_the_direct_definitions_of_server_everything(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, everything()) as runtime:
            for shape in ("mcp", "openai", "openai-responses", "anthropic"):
                direct = await runtime.tool_definitions(shape)
                proxy = await runtime.tool_definitions("proxy", shape=shape)
                assert len(direct) == EVERYTHING_TOOLS and len(proxy) == 1
                assert name_of(proxy[0]) == PROXY_TOOL_NAME
                assert proxy.size_bytes() == compact_size(list(proxy))
                # A size fact, not a timing: one proxy tool costs well under a third of 13 tools.
                assert proxy.size_bytes() * 3 < direct.size_bytes(), shape
            # The proxy is written in the shape asked for.
            openai_proxy = (await runtime.tool_definitions("proxy", shape="openai"))[0]
            assert openai_proxy["type"] == "function" and openai_proxy["function"]["name"] == "mcp"
            assert set((await runtime.tool_definitions("proxy", shape="anthropic"))[0]) == {
                "name",
                "description",
                "input_schema",
            }


# -- $ref resolution and the leave-out diagnostic ------------------------------------------------


async def test_local_refs_are_inlined_and_cycles_expanded_a_bounded_number_of_times(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            anthropic = by_name(await runtime.tool_definitions("anthropic"))
            openai = by_name(await runtime.tool_definitions("openai"))
            # The offered schema is looser than the server's past the cut; the server still decides.
            deep = {"label": "a", "children": [{"label": "b", "children": [{"label": "c", "children": []}]}]}
            tree = await runtime.call_wire("mcp__refs__make_tree", {"root": deep})

    for definitions in (anthropic, openai):
        for definition in definitions.values():
            text = json.dumps(definition)
            assert '"$ref"' not in text and '"$defs"' not in text and '"definitions"' not in text
            Draft202012Validator.check_schema(schema_of(definition))

    node = anthropic["mcp__refs__make_tree"]["input_schema"]["properties"]["root"]
    assert node["type"] == "object" and node["required"] == ["label"]
    child = node["properties"]["children"]["items"]
    assert child["properties"]["label"] == {"type": "string"}
    stub = child["properties"]["children"]["items"]
    assert stub["type"] == "object" and "not expanded further" in stub["description"]
    assert "properties" not in stub
    assert tree.text == "nodes=3"

    point = anthropic["mcp__refs__add_point"]["input_schema"]
    assert point["properties"]["p"] == {
        "type": "object",
        "description": "The point to add up.",  # the description beside the $ref wins
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
    }
    assert point["properties"]["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "string"}],
        "items": False,
    }
    assert point["properties"]["weight"] == {"type": "number", "exclusiveMinimum": 0}
    assert point["properties"]["tags"] == {"type": "array"}
    # OpenAI wants items on every array, and object subschemas rather than booleans.
    openai_point = openai["mcp__refs__add_point"]["function"]["parameters"]
    assert openai_point["properties"]["tags"] == {"type": "array", "items": {}}
    assert openai_point["properties"]["pair"]["items"] == {"not": {}}

    assert anthropic["mcp__refs__root_ref"]["input_schema"] == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }
    pick = anthropic["mcp__refs__pick_one"]["input_schema"]
    assert "oneOf" not in pick and set(pick["properties"]) == {"verbose", "id", "path"}
    assert "required" not in pick  # neither alternative's requirement holds for both


async def test_tools_that_cannot_be_made_acceptable_are_left_out_with_a_diagnostic(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            results = {f: await runtime.tool_definitions(f) for f in ("anthropic", "openai", "openai-responses")}
            mcp = await runtime.tool_definitions("mcp")

    for format, result in results.items():
        offered = {name_of(d).removeprefix("mcp__refs__") for d in result}
        assert offered.isdisjoint(LEFT_OUT)
        assert len(offered) == 11 - len(LEFT_OUT)
        reasons = {d.tool: d.reason for d in result.diagnostics}
        assert set(reasons) == {f"mcp.refs.{tool}" for tool in LEFT_OUT}
        assert {d.format for d in result.diagnostics} == {format}
        assert "is not local" in reasons["mcp.refs.remote_ref"]
        assert "points at nothing" in reasons["mcp.refs.dangling_ref"]
        assert "schema_max_nodes" in reasons["mcp.refs.fan_out"]
        assert "draft 2020-12" in reasons["mcp.refs.bad_type"] and "Boolean" in reasons["mcp.refs.bad_type"]
        assert "describes an arguments object" in reasons["mcp.refs.no_object"]
        assert result.to_dict()["diagnostics"][0].keys() == {"tool", "format", "reason"}
    # The MCP shape hands the server's own schemas on: every tool is there.
    assert len(mcp) == 11 and mcp.diagnostics == []


# -- wire names and call_wire -------------------------------------------------------------------


async def test_call_wire_maps_a_name_longer_than_64_characters_back_through_the_governed_path(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            definitions = await runtime.tool_definitions("openai")
            wire = next(n for n in map(name_of, definitions) if n.startswith("mcp__refs__summarise"))
            assert len(f"mcp__refs__{LONG_TOOL}") > 64
            assert len(wire) == 64 and WIRE.fullmatch(wire)
            result = await runtime.call_wire(wire, {})
            echoed = await runtime.call_wire("mcp__refs__echo", {"text": "by wire"})
    assert result.text == "long ok" and result.name == f"mcp.refs.{LONG_TOOL}"
    assert echoed.text == "by wire"
    events = read_events(runtime.event_log_path)
    first = [e for e in events if e["payload"].get("toolCallId") == result.tool_call_id]
    assert [e["type"] for e in first if e["type"] != "mcp.server.connected"] == CALL_CHAIN
    assert first[0]["payload"]["tool"] == f"mcp.refs.{LONG_TOOL}"
    assert {e["payload"]["tool"] for e in first if "tool" in e["payload"]} == {f"mcp.refs.{LONG_TOOL}"}
    started = next(e for e in first if e["type"] == "mcp.call.started")
    assert started["payload"]["args"]["name"] == LONG_TOOL


async def test_call_wire_refuses_unknown_and_malformed_names(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with runtime_for(tmp_path, refs()) as runtime:
            await runtime.tool_definitions()
            with pytest.raises(ToolCallError) as unknown:
                await runtime.call_wire("mcp__refs__nope", {})
            with pytest.raises(ValidationError) as dotted:
                await runtime.call_wire("mcp.refs.echo", {"text": "x"})
            with pytest.raises(ValidationError) as bad_format:
                await runtime.tool_definitions("gemini")  # type: ignore[arg-type]
            with pytest.raises(ValidationError) as bad_shape:
                await runtime.tool_definitions("proxy", shape="xml")  # type: ignore[arg-type]
    assert unknown.value.reason is FailureReason.UNKNOWN_TOOL
    assert (dotted.value.code, dotted.value.details) == ("validation_error", {"field": "name"})
    assert bad_format.value.details == {"field": "format"} and bad_shape.value.details == {"field": "shape"}
    events = read_events(runtime.event_log_path)
    assert [(e["type"], e["payload"].get("reason")) for e in events if e["type"].startswith("tool.")] == [
        ("tool.failed", "unknown_tool")
    ]
    assert not any(e["type"] == "mcp.call.started" for e in events)


@pytest.mark.parametrize("order", [("x.y", "x_y"), ("x_y", "x.y")], ids=["dotted-first", "exact-first"])
async def test_the_plain_wire_name_reaches_the_exactly_named_tool_whatever_the_server_order(
    tmp_path: Path, order: tuple[str, str]
) -> None:
    evil = RuntimeServer(
        connector_id="con_evil",
        name="evil",
        target=fixture_server("dynamic_server.py", "--initial", order[0], "--initial", order[1]),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    with anyio.fail_after(30):
        async with runtime_for(tmp_path, evil) as runtime:
            names = [name_of(d) for d in await runtime.tool_definitions()]
            exact = await runtime.call_wire("mcp__evil__x_y", {})
            dotted_wire = next(n for n in names if n.startswith("mcp__evil__x_y_"))
            dotted = await runtime.call_wire(dotted_wire, {})
    assert "mcp__evil__x_y" in names and WIRE.fullmatch(dotted_wire)
    assert exact.text.endswith("dynamic:x_y")
    assert dotted.text.endswith("dynamic:x.y")
