"""Schema bounds: depth, JSON values and compact-JSON bytes of a tool's schemas."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from patchbay.core.schema_bounds import (
    DEFAULT_SCHEMA_BOUNDS,
    BoundExceeded,
    SchemaBounds,
    exceeded_bounds,
    measure_schemas,
)
from patchbay.core.settings import Settings


def compact_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))


def nested_objects(levels: int) -> dict[str, Any]:
    """``levels`` nested objects: ``{"a": {"a": ... {} }}``."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "schema",
    [
        {},
        [],
        {"type": "object"},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "y"]}}, "required": ["a"]},
        {"mixed": [1, -2, 2.5, -1e300, None, True, False, "", [], {}], "nested": [[[]], [{}], {"k": [0]}]},
        {"unicode": "é€😀", "escapes": 'quote" back\\ nl\n tab\t \u2028 \x00', "lone": "\ud800"},
        {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf")},
        {"big": 10**40, "neg": -(10**20)},
    ],
)
def test_bytes_equal_the_compact_json_text_in_utf8(schema: Any) -> None:
    assert measure_schemas([schema]).bytes == compact_bytes(schema)


def test_depth_counts_containers_and_nodes_count_every_json_value() -> None:
    assert (measure_schemas([{}]).depth, measure_schemas([{}]).nodes) == (1, 1)
    assert (measure_schemas(["scalar"]).depth, measure_schemas(["scalar"]).nodes) == (0, 1)
    size = measure_schemas([{"type": "object", "properties": {"a": {"type": "string"}}}])
    # root, "object", properties, a, "string": keys are not values.
    assert (size.depth, size.nodes, size.complete) == (3, 5, True)
    assert measure_schemas([{"a": [[1, [2]]]}]).depth == 4


def test_input_and_output_schemas_are_measured_together() -> None:
    input_schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    output_schema = nested_objects(6)
    alone_in, alone_out = measure_schemas([input_schema]), measure_schemas([output_schema])
    both = measure_schemas([input_schema, output_schema])
    assert both.depth == max(alone_in.depth, alone_out.depth) == 6
    assert both.nodes == alone_in.nodes + alone_out.nodes
    assert both.bytes == alone_in.bytes + alone_out.bytes
    assert measure_schemas([input_schema, None]) == alone_in


@pytest.mark.parametrize("bound", ["depth", "nodes", "bytes"])
def test_each_bound_admits_its_limit_and_refuses_one_more(bound: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"enum": [1, 2, 3]}}}}
    size = measure_schemas([schema])
    exact = {"depth": size.depth, "nodes": size.nodes, "bytes": size.bytes}[bound]
    at_limit = SchemaBounds(
        max_depth=exact if bound == "depth" else 100,
        max_nodes=exact if bound == "nodes" else 100,
        max_bytes=exact if bound == "bytes" else 10_000,
    )
    assert exceeded_bounds(schema, None, at_limit) == []
    one_less = SchemaBounds(
        max_depth=at_limit.max_depth - (bound == "depth"),
        max_nodes=at_limit.max_nodes - (bound == "nodes"),
        max_bytes=at_limit.max_bytes - (bound == "bytes"),
    )
    [broken] = exceeded_bounds(schema, None, one_less)
    assert (broken.bound, broken.limit) == (bound, exact - 1)
    assert broken.measured >= exact
    if bound == "depth":
        assert broken == BoundExceeded("depth", exact, exact - 1, exact=True)
        assert broken.describe() == f"depth {exact} exceeds the limit of {exact - 1}"


def test_an_output_schema_can_break_a_bound_on_its_own() -> None:
    [broken] = exceeded_bounds({"type": "object"}, nested_objects(33))
    assert broken == BoundExceeded("depth", 33, 32, exact=True)


def test_nesting_far_past_the_recursion_limit_is_measured_without_recursion() -> None:
    hostile = nested_objects(sys.getrecursionlimit() * 20)
    with pytest.raises(RecursionError):
        json.dumps(hostile)  # what a recursive measure would run into
    broken = exceeded_bounds(hostile)
    assert [b.bound for b in broken] == ["depth", "nodes"]
    # The walk stopped one node past the node limit instead of walking all 20,000 levels.
    assert broken[1] == BoundExceeded("nodes", 10_001, 10_000, exact=False)
    assert broken[0].measured == 10_001 and not broken[0].exact
    assert broken[1].describe() == "nodes at least 10001 exceed the limit of 10000"


def test_a_huge_array_stops_the_walk_at_the_node_limit() -> None:
    schema = {"type": "object", "enum": list(range(1_000_000))}
    size = measure_schemas([schema], stop_after_nodes=100)
    assert (size.nodes, size.complete) == (101, False)
    by_bytes = measure_schemas([schema], stop_after_bytes=50)
    assert 50 < by_bytes.bytes <= 50 + len(",999999") and not by_bytes.complete


def test_a_huge_string_breaks_the_byte_bound() -> None:
    schema = {"type": "object", "description": "é" * (200 * 1024)}  # 2 bytes each in UTF-8
    [broken] = exceeded_bounds(schema)
    assert (broken.bound, broken.limit) == ("bytes", 256 * 1024)
    assert broken.measured == compact_bytes(schema)


def test_a_cyclic_in_process_structure_terminates() -> None:
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["self"] = cyclic
    broken = exceeded_bounds(cyclic)
    assert "nodes" in [b.bound for b in broken]


def test_the_default_bounds_are_the_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    assert SchemaBounds.from_settings(Settings()) == DEFAULT_SCHEMA_BOUNDS == SchemaBounds(32, 10_000, 262_144)
    monkeypatch.setenv("PATCHBAY_SCHEMA_MAX_DEPTH", "5")
    assert SchemaBounds.from_settings(Settings()).max_depth == 5
