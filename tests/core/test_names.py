"""Seed 000 §5 / DESIGN.md "Names": canonical and wire tool names."""

from __future__ import annotations

import re

import pytest

from patchbay.core.errors import PatchbayError
from patchbay.core.names import canonical_tool_name, parse_canonical_tool_name, wire_tool_name


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
    assert wire_tool_name("c", "weird.name/with spaces") == "mcp__c__weird_name_with_spaces"
