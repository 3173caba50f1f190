"""Input schemas made acceptable to model APIs (patchbay.core.schema_convert): the rewrite rules
one by one, on hand-written schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from patchbay.core.errors import UnacceptableSchema
from patchbay.core.schema_bounds import SchemaBounds
from patchbay.core.schema_convert import convert_input_schema, object_input_schema


@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_an_empty_schema_becomes_an_empty_object_schema(target: Any) -> None:
    assert convert_input_schema({}, target) == {"type": "object", "properties": {}}
    assert convert_input_schema(True, target) == {"type": "object", "properties": {}}


def test_a_root_recursion_is_cut_after_two_expansions() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "next": {"$ref": "#"}}}
    converted = convert_input_schema(schema, "anthropic")
    second = converted["properties"]["next"]  # "#" expanded once
    third = second["properties"]["next"]  # and twice
    assert second["properties"]["name"] == third["properties"]["name"] == {"type": "string"}
    assert third["properties"]["next"] == {"type": "object", "description": "Recursive (#); not expanded further."}
    assert schema["properties"]["next"] == {"$ref": "#"}  # the input is not modified


def test_mutually_recursive_definitions_terminate() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "array", "items": {"$ref": "#/$defs/A"}},
        },
    }
    converted = convert_input_schema(schema, "openai")
    assert '"$ref"' not in json.dumps(converted)
    Draft202012Validator.check_schema(converted)


def test_anchors_and_escaped_pointers_resolve() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#Point"}, "b": {"$ref": "#/$defs/a~1b"}, "c": {"$ref": "#/$defs/with%20space"}},
        "$defs": {
            "p": {"$anchor": "Point", "type": "object", "properties": {"x": {"type": "number"}}},
            "a/b": {"type": "integer"},
            "with space": {"type": "boolean"},
        },
    }
    converted = convert_input_schema(schema, "anthropic")
    assert converted["properties"] == {
        "a": {"type": "object", "properties": {"x": {"type": "number"}}},
        "b": {"type": "integer"},
        "c": {"type": "boolean"},
    }


def test_a_ref_prefixed_with_the_roots_own_id_is_local() -> None:
    schema = {
        "$id": "https://example.com/args.json",
        "type": "object",
        "properties": {"n": {"$ref": "https://example.com/args.json#/$defs/N"}},
        "$defs": {"N": {"type": "integer"}},
    }
    assert convert_input_schema(schema, "openai")["properties"] == {"n": {"type": "integer"}}


def test_conflicting_keywords_beside_a_ref_are_kept_under_all_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "merged": {"$ref": "#/$defs/S", "maxLength": 5},
            "conflict": {"$ref": "#/$defs/S", "minLength": 3, "title": "T"},
        },
        "$defs": {"S": {"type": "string", "minLength": 1}},
    }
    converted = convert_input_schema(schema, "anthropic")["properties"]
    assert converted["merged"] == {"type": "string", "minLength": 1, "maxLength": 5}
    assert converted["conflict"] == {
        "allOf": [{"type": "string", "minLength": 1}, {"minLength": 3}],
        "title": "T",
    }


def test_a_property_named_ref_is_data_not_a_reference() -> None:
    schema = {"type": "object", "properties": {"$ref": {"type": "string"}}, "default": {"$ref": "#/nowhere"}}
    converted = convert_input_schema(schema, "anthropic")
    assert converted["properties"] == {"$ref": {"type": "string"}}
    assert converted["default"] == {"$ref": "#/nowhere"}


def test_a_top_level_all_of_is_merged_and_nullable_object_becomes_object() -> None:
    schema = {
        "type": ["object", "null"],
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ],
    }
    assert convert_input_schema(schema, "anthropic") == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


def test_top_level_enum_const_and_not_are_dropped_for_openai_only() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "not": {"required": ["a"]}}
    assert "not" not in convert_input_schema(schema, "openai")
    assert convert_input_schema(schema, "anthropic")["not"] == {"required": ["a"]}


def test_booleans_and_dependencies_are_rewritten() -> None:
    schema = {
        "type": "object",
        "properties": {"any": True, "never": False, "n": {"type": "integer", "maximum": 9, "exclusiveMaximum": False}},
        "additionalProperties": False,
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
    }
    openai = convert_input_schema(schema, "openai")
    assert openai["properties"] == {"any": {}, "never": {"not": {}}, "n": {"type": "integer", "maximum": 9}}
    assert openai["additionalProperties"] is False
    assert openai["dependentRequired"] == {"a": ["b"]}
    assert openai["dependentSchemas"] == {"c": {"required": ["d"]}}
    assert convert_input_schema(schema, "anthropic")["properties"]["never"] is False


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "object", "properties": {"x": {"$ref": "other.json#/x"}}}, "is not local"),
        ({"type": "object", "properties": {"x": {"$ref": "#missing"}}}, "names no anchor"),
        ({"type": "object", "properties": {"x": {"$ref": 5}}}, "not a string"),
        ({"type": "object", "properties": {"x": {"$dynamicRef": "#meta"}}}, "$dynamicRef"),
        ({"type": "string"}, "not an object"),
        (False, "no arguments object"),
        ({"type": "object", "properties": {"x": {"type": "array", "items": 3}}}, "draft 2020-12"),
    ],
)
def test_schemas_that_cannot_be_made_acceptable_say_why(schema: Any, reason: str) -> None:
    for target in ("openai", "anthropic"):
        with pytest.raises(UnacceptableSchema) as refused:
            convert_input_schema(schema, target)  # type: ignore[arg-type]
        assert reason in str(refused.value)


def test_the_expansion_is_bounded_by_the_size_limits() -> None:
    defs = {f"L{i}": {"type": "object", "properties": {"a": {"$ref": f"#/$defs/L{i + 1}"}}} for i in range(20)}
    defs["L20"] = {"type": "string"}
    schema = {"type": "object", "properties": {"top": {"$ref": "#/$defs/L0"}}, "$defs": defs}
    with pytest.raises(UnacceptableSchema, match="schema_max_depth"):
        convert_input_schema(schema, "anthropic", SchemaBounds(max_depth=16))
    assert (
        convert_input_schema(schema, "anthropic", SchemaBounds(max_depth=64))["properties"]["top"]["type"] == "object"
    )


def test_the_mcp_shape_only_fixes_the_top_level() -> None:
    schema = {"properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "string"}}}
    assert object_input_schema(schema) == {**schema, "type": "object"}
    assert object_input_schema({}) == {"type": "object"}
    with pytest.raises(UnacceptableSchema):
        object_input_schema({"type": "array"})


def test_repeated_conversions_give_equal_independent_copies() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}}
    first = convert_input_schema(schema, "anthropic")
    first["properties"]["a"]["type"] = "changed by the caller"
    second = convert_input_schema(schema, "anthropic")
    assert second == {"type": "object", "properties": {"a": {"type": "string"}}}
    bad = {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}
    for _ in range(2):  # a remembered refusal is refused again, with the same reason
        with pytest.raises(UnacceptableSchema, match="points at nothing"):
            convert_input_schema(bad, "openai")
