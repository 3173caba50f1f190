from __future__ import annotations

import re

import pytest

from patchbay.core.errors import FailureReason, PatchbayError, ToolCallError
from patchbay.runtime.calls.router import Route, ToolRouter

pytestmark = pytest.mark.anyio

WIRE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_two_connectors_exposing_the_same_tool_are_both_reachable() -> None:
    router = ToolRouter()
    router.set_connector_tools("fs", ["read_text", "list_dir"])
    router.set_connector_tools("fs-v2", ["read_text"])
    assert router.resolve("mcp.fs.read_text") == Route("mcp", "mcp.fs.read_text", "read_text", "fs")
    assert router.resolve("mcp.fs-v2.read_text") == Route("mcp", "mcp.fs-v2.read_text", "read_text", "fs-v2")


def test_a_bare_name_that_is_both_local_and_an_mcp_tool_is_refused_as_ambiguous() -> None:
    router = ToolRouter()
    router.add_local("read_file")
    router.set_connector_tools("fs", ["read_file"])
    with pytest.raises(ToolCallError) as info:
        router.resolve("read_file")
    assert info.value.reason is FailureReason.AMBIGUOUS_CALL
    assert info.value.details["candidates"] == ["mcp.fs.read_file", "read_file"]
    assert router.resolve("mcp.fs.read_file").kind == "mcp"


def test_a_bare_local_name_resolves_to_the_local_tool() -> None:
    router = ToolRouter()
    router.add_local("read_file")
    router.set_connector_tools("fs", ["read_text"])
    assert router.resolve("read_file") == Route("local", "read_file", "read_file", None)


def test_a_bare_name_that_only_an_mcp_tool_has_is_unknown() -> None:
    router = ToolRouter()
    router.set_connector_tools("fs", ["read_text"])
    for name in ("read_text", "fs.read_text", "mcp.fs.nope", "mcp.other.read_text", "mcp.fs"):
        with pytest.raises(ToolCallError) as info:
            router.resolve(name)
        assert info.value.reason is FailureReason.UNKNOWN_TOOL


@pytest.mark.parametrize(
    "name", ["mcp.fs.read_file", "MCP.fs.read_file", "mcp__fs__read_file", "", "has space", "a.b", "x" * 65]
)
def test_a_local_tool_may_not_take_an_mcp_name_or_an_invalid_one(name: str) -> None:
    router = ToolRouter()
    with pytest.raises(PatchbayError) as info:
        router.add_local(name)
    assert info.value.code == "validation_error"


def test_a_local_tool_cannot_be_registered_twice() -> None:
    router = ToolRouter()
    router.add_local("shell")
    with pytest.raises(PatchbayError):
        router.add_local("shell")


def test_wire_names_round_trip_including_a_name_longer_than_64_characters() -> None:
    router = ToolRouter()
    long_tool = "summarise_" + "very_" * 15 + "long_document"
    router.set_connector_tools("knowledge-base", [long_tool, "get.issue", "search"])
    router.add_local("read_file")
    for canonical in (
        "mcp.knowledge-base." + long_tool,
        "mcp.knowledge-base.get.issue",
        "mcp.knowledge-base.search",
        "read_file",
    ):
        wire = router.wire_name(canonical)
        assert WIRE.fullmatch(wire), wire
        assert router.from_wire(wire) == canonical
        assert router.resolve(wire) == router.resolve(canonical)
    assert router.wire_name("mcp.knowledge-base.search") == "mcp__knowledge-base__search"
    assert len(router.wire_name("mcp.knowledge-base." + long_tool)) == 64


@pytest.mark.parametrize("order", [["x.y", "x_y"], ["x_y", "x.y"]], ids=["dotted-first", "exact-first"])
def test_the_plain_wire_name_reaches_the_exactly_matching_tool_whatever_the_order(order: list[str]) -> None:
    router = ToolRouter()
    router.set_connector_tools("evil", order)
    assert router.resolve("mcp__evil__x_y").tool == "x_y"
    assert router.wire_name("mcp.evil.x_y") == "mcp__evil__x_y"
    dotted = router.wire_name("mcp.evil.x.y")
    assert dotted != "mcp__evil__x_y" and dotted.startswith("mcp__evil__x_y_") and WIRE.fullmatch(dotted)
    assert router.resolve(dotted).tool == "x.y"


def test_a_sanitised_name_never_takes_the_plain_wire_name_even_alone_or_before_the_exact_one_arrives() -> None:
    router = ToolRouter()
    router.set_connector_tools("evil", ["x.y"])
    handed_out = router.wire_name("mcp.evil.x.y")
    assert handed_out != "mcp__evil__x_y"
    with pytest.raises(ToolCallError):
        router.resolve("mcp__evil__x_y")
    router.set_connector_tools("evil", ["x.y", "x_y"])  # the exact tool appears later
    assert router.wire_name("mcp.evil.x.y") == handed_out  # what was handed out keeps meaning x.y
    assert router.resolve("mcp__evil__x_y").tool == "x_y"


@pytest.mark.parametrize("first", [True, False], ids=["crafted-first", "crafted-last"])
def test_an_exact_name_crafted_to_equal_a_suffixed_one_wins_and_the_other_is_rehashed(first: bool) -> None:
    crafted = ToolRouter()
    crafted.set_connector_tools("evil", ["x.y"])
    suffixed = crafted.wire_name("mcp.evil.x.y").removeprefix("mcp__evil__")
    router = ToolRouter()
    router.set_connector_tools("evil", [suffixed, "x.y"] if first else ["x.y", suffixed])
    assert router.resolve(f"mcp__evil__{suffixed}").tool == suffixed
    rehashed = router.wire_name("mcp.evil.x.y")
    assert rehashed not in (f"mcp__evil__{suffixed}", "mcp__evil__x_y") and WIRE.fullmatch(rehashed)
    assert router.resolve(rehashed).tool == "x.y"


def test_replacing_a_catalog_drops_stale_tools_and_keeps_wire_names_of_the_rest() -> None:
    router = ToolRouter()
    router.set_connector_tools("jira", ["get.issue", "get_issue", "search"])
    wire = router.wire_name("mcp.jira.get_issue")
    router.set_connector_tools("jira", ["get_issue"])
    assert router.wire_name("mcp.jira.get_issue") == wire
    assert [route.name for route in router.connector_routes("jira")] == ["mcp.jira.get_issue"]
    with pytest.raises(ToolCallError):
        router.resolve("mcp.jira.search")
    router.remove_connector("jira")
    with pytest.raises(ToolCallError):
        router.resolve(wire)
    with pytest.raises(KeyError):
        router.from_wire(wire)


def test_an_unknown_bare_or_half_qualified_name_of_an_mcp_tool_hints_at_the_full_name() -> None:
    router = ToolRouter()
    router.set_connector_tools("time", ["get_current_time"])
    for name in ("get_current_time", "time.get_current_time"):
        with pytest.raises(ToolCallError) as info:
            router.resolve(name)
        assert info.value.reason is FailureReason.UNKNOWN_TOOL
        assert "'mcp.time.get_current_time'" in info.value.message
    with pytest.raises(ToolCallError) as plain:
        router.resolve("nothing_like_it")
    assert plain.value.message == "unknown tool 'nothing_like_it'"
