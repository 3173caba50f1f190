"""Governed outcomes as MCP tool results: what a host receives from a gateway call.

A successful call gives its (guarded, redacted) content blocks and structured content as they came
out of the runtime. Every failure of the governed path is a tool *result* with ``isError: true``,
never a protocol error, so the model reads why and what to do:

* text: ``error[<code>]: <message>`` plus, for the codes a person has to act on, one line of
  guidance (``approval_unavailable``: an MCP host cannot approve, so it says how the person allows
  the tool (start ``patchbay serve`` to be asked on its page, or grant it); ``permission_denied``: it is denied by policy; ``validation_error`` on the proxy tool:
  the shape of a valid request);
* ``approval_pending``: where the person answers, and to call again with the same arguments;
* ``_meta["patchbay/error"]``: ``{"code", "message", "tool"?, "toolCallId"?, "field"?,
  "approvalId"?, "approvalUrl"?}`` with the
  stable code front ends switch on (the reasons of DESIGN.md "Stable error codes" and
  ``validation_error``), never the server's stderr or the call's arguments; the same object is
  the ``structuredContent`` (``{"error": ...}``) unless the tool declares an ``outputSchema``:
  hosts validate any ``structuredContent`` against it, error results included (the MCP
  Inspector and the TypeScript SDK client do), and an error object would not match.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from patchbay.core.errors import FailureReason, PatchbayError, ToolCallError
from patchbay.runtime.calls.result import ToolCallResult

__all__ = ["ERROR_META_KEY", "PROXY_USAGE", "call_result", "error_result"]

ERROR_META_KEY = "patchbay/error"
"""The ``_meta`` key of a governed failure's code and message in a tool error result."""

PROXY_USAGE = (
    'Send {"action": "search", "query": "<keywords>"} to find tools, '
    '{"action": "describe", "tool": "<name from search>"} for one tool\'s input schema, and '
    '{"action": "call", "tool": "<name>", "arguments": {...}} to call it.'
)
"""The guidance a malformed proxy request is answered with."""


def call_result(result: ToolCallResult) -> types.CallToolResult:
    """A runtime result as the host's ``tools/call`` result (``isError`` for a ``tool_error``)."""
    return types.CallToolResult.model_validate(
        {
            "content": result.content,
            "structuredContent": result.structured_content,
            "isError": result.is_error,
        }
    )


def _guidance(error: PatchbayError, canonical: str | None, project: str, proxy: bool) -> str | None:
    reason = str(error.reason) if isinstance(error, ToolCallError) else str(error.code)
    connector, tool = _split(canonical)
    where = f" --project {project}" if project else ""
    if reason == FailureReason.APPROVAL_UNAVAILABLE:
        grant = (
            f"patchbay grant {connector} {tool} allow{where}" if connector else "patchbay grant CONNECTOR TOOL allow"
        )
        listing = f"patchbay tools {connector}" if connector else "patchbay tools CONNECTOR"
        return (
            "This tool needs the person's approval, and an MCP host cannot give it. Ask the person to "
            "start `patchbay serve` (its settings page then shows each such call to approve) and call it "
            f"again, or to allow it: `{grant}` (decisions: `{listing}`)."
        )
    if reason == FailureReason.APPROVAL_PENDING:
        url = error.details.get("approval_url")
        return (
            "The person has been asked to approve this call on Patchbay's settings page"
            + (f" ({url})" if isinstance(url, str) else "")
            + ". Tell them; once they allow it, call the tool again with exactly the same arguments "
            "(other arguments ask again). Do not work around it."
        )
    if reason == FailureReason.PERMISSION_DENIED and error.details.get("sourcedFrom") == "user_deny":
        return "The person denied this call; do not retry it unless they ask you to."
    if reason == FailureReason.PERMISSION_DENIED:
        return "The tool is denied by Patchbay's policy for this workspace; do not retry it."
    if reason == FailureReason.UNKNOWN_TOOL:
        return "Use a tool name from the tool list" + (" (action=search)." if proxy else ".")
    if reason == "validation_error" and proxy:
        return PROXY_USAGE
    return None


def _split(canonical: str | None) -> tuple[str | None, str | None]:
    if canonical is None or not canonical.startswith("mcp."):
        return None, None
    connector, _, tool = canonical[len("mcp.") :].partition(".")
    return (connector, tool) if connector and tool else (None, None)


def error_result(
    error: PatchbayError,
    *,
    canonical: str | None = None,
    project: str = "",
    proxy: bool = False,
    output_schema: bool = False,
) -> types.CallToolResult:
    """A governed failure as a tool error result (see the module docstring).

    Args:
        error: what the runtime raised: a :class:`ToolCallError` (its ``reason`` is the code) or
            another :class:`PatchbayError` such as ``validation_error``. A ``tool_error`` that
            carries the server's own error result should go through :func:`call_result` instead.
        canonical: the canonical tool name (``mcp.<connector>.<tool>``) when known, for guidance.
        project: the workspace path, for the ``patchbay grant`` command in the guidance.
        proxy: the call came through the proxy tool (its usage is the guidance for bad arguments).
        output_schema: the tool called declares an ``outputSchema``: the error then has no
            ``structuredContent`` (only ``_meta``), which the host would validate against it.
    """
    code = str(error.reason) if isinstance(error, ToolCallError) else str(error.code)
    text = f"error[{code}]: {error.message}"
    guidance = _guidance(error, canonical, project, proxy)
    if guidance:
        text += "\n" + guidance
    detail: dict[str, Any] = {"code": code, "message": error.message}
    if canonical:
        detail["tool"] = canonical
    call_id = error.details.get("toolCallId")
    if isinstance(call_id, str):
        detail["toolCallId"] = call_id
    if code == FailureReason.APPROVAL_PENDING:
        for key, name in (("approval_id", "approvalId"), ("approval_url", "approvalUrl")):
            if isinstance(value := error.details.get(key), str):
                detail[name] = value
    field = error.details.get("field")
    if code == "validation_error" and isinstance(field, str):
        detail["field"] = field
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=None if output_schema else {"error": detail},
        is_error=True,
        _meta={ERROR_META_KEY: detail},
    )
