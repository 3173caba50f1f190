"""patchbay.runtime.output.schema_check, results against outputSchema.

Sections, in this order:

- The check itself: structuredContent against outputSchema: isError results are never checked; a
  successful result that is missing or violates the schema fails with ``tool_error`` naming the tool
  and the JSON path. Unit level with real ``CallToolResult`` objects, then through a real SDK client
  against tests/fixtures/schema_server.py.
- On the governed call path: The governed call path applies the outputSchema rules end to end,
  against the real stdio fixture tests/fixtures/schema_server.py: over-bound tools never reach the
  router, an ``isError`` result is a ``tool_error`` whatever its structuredContent, and a successful
  result that violates the outputSchema fails with ``tool_error`` naming the tool and the JSON path.
  Needs ServerConnection (src/patchbay/runtime/connection/server_connection.py) to turn the SDK's
  own check off and call :func:`patchbay.runtime.output.schema_check.check_tool_result` on every
  result."""

from __future__ import annotations

import urllib.request
import uuid
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

import patchbay.runtime.output.schema_check as output_schema_module
from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.adapters.transports import open_client
from patchbay.adapters.transports.catalog import list_catalog
from patchbay.core.errors import ErrorCode, FailureReason
from patchbay.core.models import ConnectorSettings
from patchbay.runtime import read_events
from patchbay.runtime.output.schema_check import check_tool_result, turn_off_sdk_output_validation
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


# --- The check itself ---

COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "items": {"type": "array", "items": {"type": "string"}}},
    "required": ["count"],
}


def result(structured: Any = None, *, is_error: bool = False, absent: bool = False) -> types.CallToolResult:
    """A result as the SDK parses it from the wire (``structuredContent`` absent when ``absent``)."""
    wire: dict[str, Any] = {"content": [{"type": "text", "text": "x"}], "isError": is_error}
    if not absent:
        wire["structuredContent"] = structured
    return types.CallToolResult.model_validate(wire)


def failure(schema: Any, res: types.CallToolResult, tool: str = "counter") -> ToolCallError:
    with pytest.raises(ToolCallError) as caught:
        check_tool_result(tool, schema, res, connector="conn")
    error = caught.value
    assert (error.reason, error.code) == (FailureReason.TOOL_ERROR, ErrorCode.TOOL_ERROR)
    assert error.to_dict()["code"] == "tool_error"
    assert (error.details["connector"], error.details["tool"]) == ("conn", tool)
    return error


def test_a_matching_result_passes() -> None:
    check_tool_result("counter", COUNT_SCHEMA, result({"count": 3, "items": ["a"]}))


@pytest.mark.parametrize(
    "res",
    [
        result({"count": "many"}, is_error=True),
        result({"unrelated": True}, is_error=True),
        result(absent=True, is_error=True),
        result(None, is_error=True),
    ],
)
def test_an_is_error_result_is_never_checked(res: types.CallToolResult) -> None:
    check_tool_result("counter", COUNT_SCHEMA, res)
    check_tool_result("counter", {"type": "whatever"}, res)  # not even an invalid schema is looked at


def test_a_tool_without_an_output_schema_is_not_checked() -> None:
    check_tool_result("counter", None, result({"anything": [1, 2]}))
    check_tool_result("counter", None, result(absent=True))


def test_a_type_violation_names_the_tool_and_the_json_path() -> None:
    error = failure(COUNT_SCHEMA, result({"count": 1, "items": ["a", "b", 7]}))
    assert error.message == (
        "conn: 'counter' returned structuredContent that does not match its outputSchema at $.items[2]: "
        "7 is not of type 'string'"
    )
    assert error.details["problem"] == "output_schema_mismatch"
    assert error.details["jsonPath"] == "$.items[2]"
    assert error.details["schemaPath"] == "/properties/items/items/type"
    assert error.details["keyword"] == "type"


def test_a_missing_required_property_fails_at_the_root_path() -> None:
    error = failure(COUNT_SCHEMA, result({"items": []}))
    assert error.details["jsonPath"] == "$"
    assert error.details["keyword"] == "required"
    assert "'count' is a required property" in error.message


def test_absent_structured_content_fails_and_an_explicit_null_is_validated() -> None:
    missing = failure(COUNT_SCHEMA, result(absent=True))
    assert missing.details["problem"] == "structured_content_missing"
    assert missing.message == (
        "conn: 'counter' declares an outputSchema but its successful result has no structuredContent"
    )
    null = failure(COUNT_SCHEMA, result(None))
    assert null.details["problem"] == "output_schema_mismatch"
    assert "None is not of type 'object'" in null.message


def test_server_controlled_text_in_the_message_is_bounded() -> None:
    key = "k" * 5000
    schema = {"type": "object", "properties": {key: {"type": "integer"}}}
    error = failure(schema, result({key: "v" * 100_000}))
    assert len(error.message) < 600
    assert error.details["jsonPath"].endswith("…") and len(error.details["jsonPath"]) <= 201


def test_an_invalid_output_schema_fails_every_successful_result_with_a_clear_reason() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "whatever"}}}
    error = failure(schema, result({"a": 1}))
    assert error.details["problem"] == "output_schema_invalid"
    assert error.message.startswith("conn: 'counter' has an outputSchema that is not a valid JSON Schema (")
    assert "its results cannot be checked" in error.message


def test_a_ref_never_leaves_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the validator tried to fetch a $ref")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/schema.json"}}}
    error = failure(remote, result({"a": 1}))
    assert error.details["problem"] == "output_schema_invalid"
    assert "$ref that does not resolve inside it" in error.message
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}
    assert failure(dangling, result({"a": 1})).details["problem"] == "output_schema_invalid"
    local = {"type": "object", "$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}
    check_tool_result("counter", local, result({"a": 1}))
    assert failure(local, result({"a": "one"})).details["jsonPath"] == "$.a"


def test_the_schema_dialect_follows_dollar_schema() -> None:
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"t": {"items": [{"type": "integer"}], "additionalItems": False}},
    }
    check_tool_result("counter", draft7, result({"t": [1]}))
    assert failure(draft7, result({"t": [1, 2]})).details["keyword"] == "additionalItems"


def test_content_nested_too_deeply_to_validate_fails_cleanly() -> None:
    recursive = {
        "type": "object",
        "$defs": {"n": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/n"}}},
        "properties": {"v": {"$ref": "#/$defs/n"}},
    }
    value: Any = 1
    for _ in range(3000):
        value = [value]
    error = failure(recursive, result({"v": value}))
    assert error.details["problem"] == "structured_content_too_deep"


def test_validators_are_compiled_once_per_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[Any] = []
    real = output_schema_module.validator_for

    def counting(schema: Any, default: Any = None) -> Any:
        compiled.append(schema)
        return real(schema, default=default)

    monkeypatch.setattr(output_schema_module, "validator_for", counting)
    schema = {**COUNT_SCHEMA, "title": f"unique-{uuid.uuid4()}"}  # not in the cache yet
    check_tool_result("counter", schema, result({"count": 1}))
    check_tool_result("counter", dict(schema), result({"count": 2}))  # an equal schema, another object
    failure(dict(reversed(list(schema.items()))), result({"count": "x"}))  # key order does not matter
    assert len(compiled) == 1
    broken = {"type": "object", "title": f"broken-{uuid.uuid4()}", "properties": {"a": {"type": 5}}}
    for _ in range(3):
        failure(broken, result({"a": 1}))
    assert len(compiled) == 2  # a failed compile is cached too


async def test_the_event_loop_form_checks_small_results_inline_and_big_ones_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hops: list[Any] = []
    real = output_schema_module.anyio.to_thread.run_sync

    async def counting(fn: Any, *args: Any) -> Any:
        hops.append(fn)
        return await real(fn, *args)

    monkeypatch.setattr(output_schema_module.anyio.to_thread, "run_sync", counting)
    small, big = {"count": 1}, {"count": 1, "items": ["x"] * (output_schema_module.CHECK_INLINE_NODES + 1)}
    for structured in (small, big):
        await output_schema_module.check_tool_result_async("counter", COUNT_SCHEMA, result(structured))
        with pytest.raises(ToolCallError) as info:
            await output_schema_module.check_tool_result_async(
                "counter", COUNT_SCHEMA, result({**structured, "count": "x"}), connector="c"
            )
        assert info.value.details["jsonPath"] == "$.count"
    assert len(hops) == 2  # only the big result's two checks left the event loop


# --- through a real SDK client over stdio ---------------------------------------------------------


async def test_the_sdk_path_with_its_check_turned_off_and_ours_applied(tmp_path: Path) -> None:
    outcomes: dict[str, Any] = {}
    with anyio.fail_after(30):
        async with open_client(fixture_server("schema_server.py"), workspace=tmp_path) as connection:
            client = connection.client
            catalog = await list_catalog(client, max_pages=50, max_metadata_bytes=2 * 1024 * 1024)
            schemas = {tool.name: tool.output_schema for tool in catalog.tools}

            # What mcp 2.3.0 does on its own: isError results pass, a violating success raises a
            # bare RuntimeError without the JSON path.
            assert (await client.call_tool("count_error", {})).is_error
            with pytest.raises(RuntimeError, match="Invalid structured content returned by tool count_wrong"):
                await client.call_tool("count_wrong", {})

            turn_off_sdk_output_validation(client.session)
            for name in ("count_error", "count_wrong", "count_ok", "count_missing", "bad_output_schema"):
                res = await client.call_tool(name, {})
                try:
                    check_tool_result(name, schemas[name], res, connector="schema")
                    outcomes[name] = ("ok", res.is_error, res.structured_content)
                except ToolCallError as exc:
                    outcomes[name] = (exc.details["problem"], exc.details.get("jsonPath"), exc.message)

    assert outcomes["count_error"] == ("ok", True, {"count": "many"})
    assert outcomes["count_ok"] == ("ok", False, {"count": 3})
    assert outcomes["count_wrong"] == (
        "output_schema_mismatch",
        "$.count",
        "schema: 'count_wrong' returned structuredContent that does not match its outputSchema at $.count: "
        "'many' is not of type 'integer'",
    )
    assert outcomes["count_missing"][:2] == ("structured_content_missing", None)
    assert outcomes["bad_output_schema"][:2] == ("output_schema_invalid", None)


# --- On the governed call path ---


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
