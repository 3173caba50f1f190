"""list_catalog leaves out tools whose schemas break a bound or are malformed, and keeps the rest,
against the real stdio fixture tests/fixtures/schema_server.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from patchbay.adapters.transports import StdioLink, open_client
from patchbay.adapters.transports.catalog import Catalog, ToolDiagnostic, list_catalog, screen_tool
from patchbay.core.schema_bounds import SchemaBounds
from tests.support.processes import assert_group_gone
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio

KEPT = ["echo", "bad_output_schema", "count_error", "count_wrong", "count_ok", "count_missing"]


async def schema_catalogs(tmp_path: Path, *bounds: dict[str, int], mode: str = "legacy") -> list[Catalog]:
    """One list_catalog per ``bounds`` over one real SDK Client on stdio; the server is gone after."""
    links: list[Any] = []
    with anyio.fail_after(30):
        async with open_client(
            fixture_server("schema_server.py"), workspace=tmp_path, mode=mode, link_holder=links
        ) as connection:
            catalogs = [
                await list_catalog(connection.client, max_pages=50, max_metadata_bytes=2 * 1024 * 1024, **limits)
                for limits in bounds
            ]
    assert isinstance(links[0], StdioLink) and links[0].pgid is not None
    assert_group_gone(links[0].pgid)
    return catalogs


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_bound_tools_are_left_out_with_a_diagnostic_each_and_the_rest_stay(
    tmp_path: Path, mode: str
) -> None:
    [catalog] = await schema_catalogs(tmp_path, {}, mode=mode)
    assert [tool.name for tool in catalog.tools] == KEPT
    by_tool = {d.tool: d for d in catalog.diagnostics}
    assert list(by_tool) == ["deep_input", "huge_schema", "many_nodes"]

    assert by_tool["deep_input"] == ToolDiagnostic(
        tool="deep_input",
        problem="depth",
        message="tool 'deep_input' left out: its schemas' depth 41 exceeds the limit of 32",
        measured=41,
        limit=32,
        exact=True,
    )
    huge = by_tool["huge_schema"]
    assert (huge.problem, huge.limit) == ("bytes", 256 * 1024)
    assert huge.measured is not None and huge.measured > 256 * 1024
    assert huge.message.startswith("tool 'huge_schema' left out: its schemas' bytes at least ")
    many = by_tool["many_nodes"]
    assert (many.problem, many.measured, many.limit, many.exact) == ("nodes", 10_001, 10_000, False)
    assert "tool 'many_nodes'" in many.message and "exceed the limit of 10000" in many.message
    assert many.to_dict() == {
        "tool": "many_nodes",
        "problem": "nodes",
        "message": many.message,
        "measured": 10_001,
        "limit": 10_000,
        "exact": False,
    }
    # The schemas of kept tools arrive intact.
    echo = catalog.tools[0]
    assert echo.input_schema["required"] == ["text"]
    assert catalog.tools[KEPT.index("count_ok")].output_schema == {
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
    }


async def test_the_bounds_are_parameters(tmp_path: Path) -> None:
    # Raised limits let every tool in; a byte limit of 100 leaves out the four count_* tools
    # (input + output schema = 113 bytes) but keeps echo (77 bytes).
    roomy, tight = await schema_catalogs(
        tmp_path,
        {"max_schema_depth": 64, "max_schema_nodes": 20_000, "max_schema_bytes": 400_000},
        {"max_schema_bytes": 100},
    )
    assert len(roomy.tools) == 9 and roomy.diagnostics == []
    assert [tool.name for tool in tight.tools] == ["echo", "bad_output_schema"]
    left_out = {d.tool: (d.problem, d.measured, d.limit) for d in tight.diagnostics}
    assert left_out["count_ok"] == ("bytes", 113, 100)
    assert set(left_out) == {"deep_input", "huge_schema", "many_nodes", *KEPT[2:]}


def tool(name: str, input_schema: Any, output_schema: Any = None) -> types.Tool:
    # model_construct: shapes the SDK's wire validation would refuse on a 2025 connection.
    return types.Tool.model_construct(name=name, input_schema=input_schema, output_schema=output_schema)


@pytest.mark.parametrize(
    ("input_schema", "output_schema", "reason"),
    [
        ([{"type": "object"}], None, "its inputSchema is a list, not a JSON object"),
        ({"type": "string"}, None, 'its inputSchema root is not {"type": "object"}'),
        ({"properties": {}}, None, 'its inputSchema root is not {"type": "object"}'),
        ({"type": "object"}, ["x"], "its outputSchema is a list, not a JSON object"),
        ({"type": "object", "$schema": {"x": 1}}, None, "its inputSchema has a $schema that is not a string"),
        ({"type": "object"}, {"$schema": 7}, "its outputSchema has a $schema that is not a string"),
    ],
)
def test_malformed_schemas_leave_the_tool_out(input_schema: Any, output_schema: Any, reason: str) -> None:
    diagnostic = screen_tool(tool("odd", input_schema, output_schema))
    assert diagnostic is not None
    assert (diagnostic.tool, diagnostic.problem, diagnostic.measured, diagnostic.limit) == (
        "odd",
        "malformed",
        None,
        None,
    )
    assert diagnostic.message.startswith(f"tool 'odd' left out: {reason}")


def test_a_well_formed_tool_within_bounds_passes_and_a_long_name_is_shortened_in_the_message() -> None:
    assert screen_tool(tool("fine", {"type": "object"}, {"type": "object"})) is None
    name = "n" * 500
    diagnostic = screen_tool(tool(name, {"type": "object", "x": [[[[]]]]}), SchemaBounds(max_depth=2))
    assert diagnostic is not None and diagnostic.tool == name
    assert diagnostic.message == f"tool '{'n' * 80}…' left out: its schemas' depth 5 exceeds the limit of 2"
