"""Seed 000 §5 / DESIGN.md "Names": canonical and wire tool names."""

from __future__ import annotations

import re

import pytest

from patchbay.core.errors import PatchbayError
from patchbay.core.names import canonical_tool_name, parse_canonical_tool_name, tool_name_problem, wire_tool_name


def test_canonical_names_round_trip_even_with_dots_in_the_tool_name() -> None:
    name = canonical_tool_name("fs-v2", "read.text")
    assert name == "mcp.fs-v2.read.text"
    assert parse_canonical_tool_name(name) == ("fs-v2", "read.text")


@pytest.mark.parametrize("name", ["read_file", "mcp.", "mcp.fs", "mcp..x", "mcp.fs."])
def test_non_canonical_names_are_refused(name: str) -> None:
    with pytest.raises(PatchbayError) as exc:
        parse_canonical_tool_name(name)
    assert exc.value.code == "validation_error"


def test_wire_names_are_safe_and_at_most_64_chars() -> None:
    assert wire_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    long = wire_tool_name("a-very-long-connector-name", "x" * 80)
    assert len(long) == 64 and re.fullmatch(r"[A-Za-z0-9_-]+", long)
    assert long == wire_tool_name("a-very-long-connector-name", "x" * 80)
    assert long != wire_tool_name("a-very-long-connector-name", "x" * 81)
    sanitised = wire_tool_name("c", "weird.name/with spaces")
    assert (
        sanitised.startswith("mcp__c__weird_name_with_spaces_")
        and len(sanitised) == len("mcp__c__weird_name_with_spaces") + 9
    )
    assert sanitised != wire_tool_name("c", "weird_name_with_spaces") == "mcp__c__weird_name_with_spaces"
    assert wire_tool_name("c", "x.y", attempt=1) not in (wire_tool_name("c", "x.y"), "mcp__c__x_y")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("get_issue", None),
        ("v1.2-beta_X", None),
        ("x" * 128, None),
        ("", "is empty"),
        ("x" * 129, "is 129 characters long (MCP allows at most 128)"),
        ("danger ", "contains whitespace (U+0020 SPACE)"),
        (
            "d\u0430nger",
            "contains a non-ASCII letter or digit that can look like an ASCII one (U+0430 CYRILLIC SMALL LETTER A)",
        ),
        ("danger\u200b", "contains an invisible or control character (U+200B ZERO WIDTH SPACE)"),
        (
            "\uff44anger",
            "contains a non-ASCII letter or digit that can look like an ASCII one (U+FF44 FULLWIDTH LATIN SMALL LETTER D)",
        ),
        ("mcp.evil.danger", "starts with 'mcp.', like a Patchbay canonical name (mcp.<connector>.<tool>)"),
        ("MCP.x", "starts with 'MCP.', like a Patchbay canonical name (mcp.<connector>.<tool>)"),
        ("resources/read", "contains '/' (U+002F SOLIDUS), outside MCP's [A-Za-z0-9_.-]"),
    ],
)
def test_tool_names_outside_the_mcp_rule_are_named_with_their_problem(name: str, problem: str | None) -> None:
    assert tool_name_problem(name) == problem
