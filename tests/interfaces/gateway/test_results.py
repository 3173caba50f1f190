"""Governed outcomes as the gateway's MCP tool results."""

from __future__ import annotations

from patchbay.core.errors import FailureReason, ToolCallError, ValidationError
from patchbay.interfaces.gateway.results import ERROR_META_KEY, PROXY_USAGE, call_result, error_result
from patchbay.runtime.calls.result import ToolCallResult


def test_a_result_keeps_its_content_and_structured_content() -> None:
    result = ToolCallResult("tc_1", "mcp.t.x", [{"type": "text", "text": "hi"}], {"v": 1}, "hi", 10)
    answered = call_result(result)
    assert not answered.is_error and answered.structured_content == {"v": 1}
    assert answered.content[0].text == "hi"  # type: ignore[union-attr]


def test_an_ask_without_approver_says_how_the_person_allows_the_tool() -> None:
    error = ToolCallError(FailureReason.APPROVAL_UNAVAILABLE, "no approver", details={"toolCallId": "tc_2"})
    answered = error_result(error, canonical="mcp.clock.get_current_time", project="/ws")
    text = answered.content[0].text  # type: ignore[union-attr]
    assert answered.is_error and text.startswith("error[approval_unavailable]: no approver")
    assert "`patchbay grant clock get_current_time allow --project /ws`" in text
    assert answered.structured_content == {
        "error": {
            "code": "approval_unavailable",
            "message": "no approver",
            "tool": "mcp.clock.get_current_time",
            "toolCallId": "tc_2",
        }
    }


def test_bad_proxy_arguments_are_answered_with_the_proxy_usage_and_the_field() -> None:
    error = ValidationError("action must be one of search, describe, call", details={"field": "action"})
    answered = error_result(error, proxy=True)
    assert PROXY_USAGE in answered.content[0].text  # type: ignore[union-attr]
    assert answered.structured_content is not None
    assert answered.structured_content["error"]["field"] == "action"


def test_a_typed_tools_error_carries_its_code_in_meta_only() -> None:
    # a host validates structuredContent against the tool's outputSchema even for an error result
    error = ToolCallError(FailureReason.PERMISSION_DENIED, "denied")
    answered = error_result(error, canonical="mcp.time.convert_time", output_schema=True)
    assert answered.is_error and answered.structured_content is None
    assert answered.meta == {
        ERROR_META_KEY: {"code": "permission_denied", "message": "denied", "tool": "mcp.time.convert_time"}
    }
    dumped = answered.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["_meta"][ERROR_META_KEY]["code"] == "permission_denied" and "structuredContent" not in dumped
    untyped = error_result(error, canonical="mcp.time.convert_time")
    assert untyped.structured_content == {"error": untyped.meta[ERROR_META_KEY]}  # type: ignore[index]


def test_a_pending_approval_names_where_the_person_answers_and_to_call_again_unchanged() -> None:
    url = "http://127.0.0.1:8765/ui#approval-apr_0123"
    error = ToolCallError(
        FailureReason.APPROVAL_PENDING,
        f"mcp.clock.get_current_time waits for the person's approval at {url}",
        details={"approval_id": "apr_0123", "approval_url": url, "toolCallId": "tc_3"},
    )
    answered = error_result(error, canonical="mcp.clock.get_current_time", project="/ws")
    text = answered.content[0].text  # type: ignore[union-attr]
    assert answered.is_error and text.startswith("error[approval_pending]: ")
    assert f"settings page ({url})" in text and "exactly the same arguments" in text
    assert answered.meta == {
        ERROR_META_KEY: {
            "code": "approval_pending",
            "message": error.message,
            "tool": "mcp.clock.get_current_time",
            "toolCallId": "tc_3",
            "approvalId": "apr_0123",
            "approvalUrl": url,
        }
    }


def test_a_call_the_person_denied_is_not_called_a_policy() -> None:
    error = ToolCallError(
        FailureReason.PERMISSION_DENIED, "mcp.clock.x was denied (user_deny)", details={"sourcedFrom": "user_deny"}
    )
    text = error_result(error, canonical="mcp.clock.x").content[0].text  # type: ignore[union-attr]
    assert "The person denied this call" in text and "policy" not in text
    by_policy = error_result(ToolCallError(FailureReason.PERMISSION_DENIED, "denied"), canonical="mcp.clock.x")
    assert "denied by Patchbay's policy" in by_policy.content[0].text  # type: ignore[union-attr]
