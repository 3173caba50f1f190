"""One tool call: its result type and its event chain.

:class:`CallEvents` appends the chain of one call to the session log. It redacts and JSON-encodes
the call's variable parts once (tool name, arguments, connector name; names are memoised across
calls) and renders each payload from them plus values the runtime generates itself (the
``tc_<n>`` id, numbers, fixed literals such as ``"tools/call"`` or ``"allow"``), which redaction
leaves unchanged (a test pins that every payload written is a fixed point of ``redact_value``).
This keeps the seven events of a call cheap; the events before a request go out in one write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from patchbay.core.errors import FailureReason, PatchbayError, ToolCallError
from patchbay.core.names import MCP_PREFIX, parse_canonical_tool_name
from patchbay.runtime.calls.permissions import Resolution
from patchbay.runtime.events.log import EventLog, encode_json
from patchbay.runtime.output.guard import GuardedOutput, OutputGuard, measure_output

__all__ = ["CallEvents", "ToolCallResult", "local_result", "mcp_result", "preview_text", "to_result", "tool_error"]


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """The result of one successful (or, attached to a ``tool_error``, failed) tool call.

    Attributes:
        tool_call_id: the ``toolCallId`` of its events (``tc_<n>``: the session's n-th call).
        name: the canonical tool name.
        content: the content blocks as JSON dicts (wire/camelCase form); for a ``truncated``
            result, the bounded blocks (a head + tail preview, notes for binary blocks left out).
        structured_content: the structured result, if the tool returned one (None when a
            ``truncated`` result had to leave it out).
        text: every text block joined with ``"\\n"``; untrusted, see :attr:`model_text`.
        size_bytes: UTF-8 size of the JSON of the whole content + structured content (before
            any cut).
        is_error: True only for the result attached to a ``tool_error`` ``ToolCallError``.
        truncated: the result was over ``max_output_bytes``/``max_output_lines`` and was cut.
        artifact_id: ``sha256:<hex>`` of the whole result in the artifact store
            (:class:`patchbay.runtime.output.artifacts.ArtifactStore`), when it was cut and stored.
    """

    tool_call_id: str
    name: str
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    text: str
    size_bytes: int
    is_error: bool = False
    truncated: bool = False
    artifact_id: str | None = None

    @property
    def untrusted_prefix(self) -> str:
        """``[mcp:<connector>:<tool>]`` for an MCP tool, ``""`` for a local tool."""
        if not self.name.startswith(MCP_PREFIX):
            return ""
        try:
            connector, tool = parse_canonical_tool_name(self.name)
        except PatchbayError:
            return ""
        return f"[mcp:{connector}:{tool}]"

    @property
    def model_text(self) -> str:
        """The text to hand on to a model: :attr:`text` (or, when there is none, the structured
        content's JSON). MCP output enters a model's context as untrusted text, so it carries
        ``[mcp:<connector>:<tool>]`` and a newline in front; a local tool's text is as is."""
        body = self.text
        if not body and self.structured_content is not None:
            body = encode_json(self.structured_content)
        prefix = self.untrusted_prefix
        return f"{prefix}\n{body}" if prefix else body


def _dump(block: Any) -> dict[str, Any]:
    # The common case (plain text, no annotations/_meta) without a pydantic round trip; same output.
    if type(block) is types.TextContent and block.annotations is None and block.meta is None:
        return {"type": "text", "text": block.text}
    dumped: dict[str, Any] = block.model_dump(by_alias=True, exclude_none=True)
    return dumped


def _result(call_id: str, name: str, out: GuardedOutput, is_error: bool) -> ToolCallResult:
    return ToolCallResult(
        call_id,
        name,
        out.content,
        out.structured_content,
        out.text,
        out.size_bytes,
        is_error,
        out.truncated,
        out.artifact_id,
    )


def to_result(
    call_id: str, name: str, blocks: list[Any], structured: Any, is_error: bool, guard: OutputGuard | None = None
) -> ToolCallResult:
    """Build a :class:`ToolCallResult` from MCP content blocks (SDK models or wire-form dicts) and
    structured content; bounded by ``guard`` when given, else kept whole."""
    content = [block if isinstance(block, dict) else _dump(block) for block in blocks]
    if structured is not None and type(structured) is not dict and isinstance(structured, Mapping):
        structured = dict(structured)
    if guard is not None:
        return _result(call_id, name, guard.bound(content, structured), is_error)
    text = "\n".join(
        [block["text"] for block in content if block.get("type") == "text" and type(block.get("text")) is str]
    )
    size = measure_output(content, structured)
    return ToolCallResult(call_id, name, content, structured, text, size, is_error)


def mcp_result(call_id: str, name: str, result: types.CallToolResult, guard: OutputGuard) -> ToolCallResult:
    """A server's ``CallToolResult`` as a :class:`ToolCallResult`, bounded by ``guard``: an
    oversized result is cut to a preview and stored whole as an artifact (see
    :mod:`patchbay.runtime.output.guard`)."""
    return to_result(call_id, name, result.content, result.structured_content, bool(result.is_error), guard)


def local_result(call_id: str, name: str, value: Any, guard: OutputGuard | None = None) -> ToolCallResult:
    """A local tool's return value as a result: a ``CallToolResult`` as is, a str as one text
    block, a dict as structured content plus its JSON as text, None as no content, anything else
    as its JSON text. Bounded by ``guard`` when given, like :func:`mcp_result`."""
    if isinstance(value, types.CallToolResult):
        return to_result(call_id, name, value.content, value.structured_content, bool(value.is_error), guard)
    if isinstance(value, dict):
        text_block = types.TextContent(type="text", text=encode_json(value))
        return to_result(call_id, name, [text_block], value, False, guard)
    text = value if isinstance(value, str) else ("" if value is None else encode_json(value))
    return to_result(call_id, name, [types.TextContent(type="text", text=text)] if text else [], None, False, guard)


def preview_text(text: str, limit: int = 200) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut
    (a cut inside a word -- a URL -- would leave a misleading fragment)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    boundary = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
    if boundary > limit // 2:
        cut = cut[:boundary]
    return cut.rstrip() + "…"


def tool_error(name: str, outcome: ToolCallResult) -> ToolCallError:
    """``ToolCallError(tool_error)`` with the failed result as ``.result``; its message
    quotes at most 200 characters of the result's text (cut at a word boundary)."""
    preview = preview_text(outcome.text) or "no details"
    message = f"{name} returned an error: {preview}"
    return ToolCallError(FailureReason.TOOL_ERROR, message, details={"tool": name}, result=outcome)


class CallEvents:
    """Appends the events of one call; ``defer`` marks events that another follows at once.

    Args:
        log: the session log.
        name: the tool name as requested (the canonical name replaces it once resolved).
        args: the call's arguments (redacted here, once).

    Appending ``model.tool_call_requested`` (deferred) assigns :attr:`id`.
    """

    __slots__ = ("_jargs", "_jserver", "_jtool", "args", "id", "log", "tool")

    def __init__(self, log: EventLog, name: str, args: dict[str, Any]):
        self.log = log
        self.args = args
        self.tool = name
        self._jtool = log.redact_json(name)
        self._jargs = encode_json(log.redact(args))
        self._jserver = '""'
        self.id = log.next_tool_call_id()
        log.append_json(
            "model.tool_call_requested",
            '{"tool":' + self._jtool + ',"args":' + self._jargs + ',"toolCallId":"' + self.id + '"}',
            defer=True,
        )

    def _head(self, key: str, value: str) -> str:
        return '{"' + key + '":' + value + ',"toolCallId":"' + self.id + '"'

    def resolved(self, name: str, server: str | None) -> None:
        """The name resolved to canonical ``name`` (of connector ``server``, None for local)."""
        self.tool = name
        self._jtool = self.log.redact_json(name)
        if server is not None:
            self._jserver = self.log.redact_json(server)

    def ambiguous(self, candidates: list[str]) -> None:
        body = encode_json(self.log.redact(list(candidates)))
        self.log.append_json(
            "tool.ambiguous_call", self._head("tool", self._jtool) + ',"candidates":' + body + "}", defer=True
        )

    def _permission_requested(self, risk: str, source: str) -> tuple[str, str]:
        return (
            "permission.requested",
            self._head("tool", self._jtool)
            + ',"args":'
            + self._jargs
            + f',"riskAtDecision":"{risk}","sourcedFrom":"{source}"}}',
        )

    def permission_requested(self, risk: str, source: str) -> None:
        self.log.append_json(*self._permission_requested(risk, source), defer=True)

    def _permission_resolved(self, resolution: Resolution) -> tuple[str, str]:
        tail = f',"decision":"{resolution.decision}","actor":"{resolution.actor}","sourcedFrom":"{resolution.sourced_from}"'
        if resolution.reason is not None:
            tail += f',"reason":"{resolution.reason}"'
        return "permission.resolved", self._head("tool", self._jtool) + tail + "}"

    def permission_resolved(self, resolution: Resolution) -> None:
        """Log the resolution; a denial raises ``ToolCallError`` with its reason (the call ends)."""
        self.log.append_json(*self._permission_resolved(resolution), defer=True)
        if not resolution.allowed:
            reason = resolution.reason or FailureReason.PERMISSION_DENIED
            if reason is FailureReason.APPROVAL_PENDING:
                where = resolution.details.get("approval_url")
                message = f"{self.tool} waits for the person's approval" + (f" at {where}" if where else "")
            else:
                message = f"{self.tool} was denied ({resolution.sourced_from})"
            details = {**resolution.details, "tool": self.tool}
            if resolution.actor == "user":  # the person said no to this call: not a standing policy
                details["sourcedFrom"] = resolution.sourced_from
            raise ToolCallError(reason, message, details=details)

    def _mcp_started(self, tool: str) -> tuple[str, str]:
        wire = '{"name":' + self.log.redact_json(tool) + ',"arguments":' + self._jargs + "}"
        return "mcp.call.started", self._head("server", self._jserver) + ',"method":"tools/call","args":' + wire + "}"

    def mcp_started(self, tool: str) -> None:
        self.log.append_json(*self._mcp_started(tool), defer=True)

    def _tool_started(self) -> tuple[str, str]:
        return "tool.started", self._head("tool", self._jtool) + "}"

    def tool_started(self) -> None:
        """Not deferred: everything since the request event is written before the call runs."""
        self.log.append_json(*self._tool_started())

    def allowed_and_started(self, risk: str, source: str, resolution: Resolution, tool: str) -> None:
        """``permission.requested``, ``permission.resolved`` (an allowing ``resolution``),
        ``mcp.call.started`` and ``tool.started`` of an MCP call decided at once, appended in one
        operation: the same events as the four calls one by one."""
        assert resolution.allowed
        self.log.append_jsons(
            [
                self._permission_requested(risk, source),
                self._permission_resolved(resolution),
                self._mcp_started(tool),
                self._tool_started(),
            ]
        )

    def _mcp_completed(self, duration_ms: float) -> tuple[str, str]:
        return "mcp.call.completed", self._head("server", self._jserver) + f',"durationMs":{duration_ms!r}}}'

    def mcp_completed(self, duration_ms: float) -> None:
        self.log.append_json(*self._mcp_completed(duration_ms), defer=True)

    def mcp_failed(self, duration_ms: float, reason: str, error: str) -> None:
        error_json = encode_json(self.log.redact(error))
        tail = f',"durationMs":{duration_ms!r},"reason":"{reason}","error":' + error_json + "}"
        self.log.append_json("mcp.call.failed", self._head("server", self._jserver) + tail, defer=True)

    def tool_completed(self, outcome: ToolCallResult, preview_chars: int) -> None:
        """``resultPreview``: the first ``preview_chars`` of the text (else of the structured JSON);
        ``resultSize``: bytes of the whole result. A cut result adds ``truncated: true`` and, when
        it was stored, ``artifactId``; the result itself never goes in."""
        self.log.append_json(*self._tool_completed(outcome, preview_chars))

    def mcp_and_tool_completed(self, duration_ms: float, outcome: ToolCallResult, preview_chars: int) -> None:
        """``mcp.call.completed`` and ``tool.completed`` in one operation (as the two calls)."""
        self.log.append_jsons([self._mcp_completed(duration_ms), self._tool_completed(outcome, preview_chars)])

    def _tool_completed(self, outcome: ToolCallResult, preview_chars: int) -> tuple[str, str]:
        # Redact, then cut: a cut through a key would leave an unrecognisable piece of a secret.
        margin = preview_chars + 256
        preview = self.log.redact(outcome.text[:margin])[:preview_chars]
        if not preview and outcome.structured_content is not None:
            preview = self.log.redact(encode_json(outcome.structured_content)[:margin])[:preview_chars]
        preview_json = encode_json(preview)
        tail = ',"resultPreview":' + preview_json + f',"resultSize":{int(outcome.size_bytes)}'
        if outcome.truncated:
            tail += ',"truncated":true'
            if outcome.artifact_id is not None:
                tail += ',"artifactId":' + self.log.redact_json(outcome.artifact_id)
        return "tool.completed", self._head("tool", self._jtool) + tail + "}"

    def tool_failed(self, reason: str) -> None:
        self.log.append_json("tool.failed", self._head("tool", self._jtool) + f',"reason":"{reason}"}}')
