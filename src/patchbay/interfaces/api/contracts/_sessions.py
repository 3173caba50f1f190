"""Contracts of the session routes: workspace runtimes hosted by ``patchbay serve`` and the governed
call path over REST."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from patchbay.core.models import GrantDecision
from patchbay.interfaces.api.contracts._base import ErrorBody, _Request, _Response

__all__ = [
    "SessionClosed",
    "SessionEvents",
    "SessionList",
    "SessionOpen",
    "SessionState",
    "SessionTool",
    "SessionTools",
    "SessionView",
    "SessionWarning",
    "ToolCallOutcome",
    "ToolCallRequest",
]

SessionState = Literal["building", "ready", "restart_pending", "failed", "closing"]


class SessionOpen(_Request):
    """``POST /api/sessions``: open a session in a workspace."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"cwd": "/home/me/work/repo"}]})

    cwd: Annotated[str, Field(min_length=1, max_length=4096, pattern=r"^/[^\x00]*$")] | None = None
    """Absolute path of the workspace directory; default: where the server was started. It becomes a
    project if it is none yet, and its runtime snapshot is written there
    (``<cwd>/.patchbay/mcp-runtime.json``)."""
    approvals: Literal["request", "browser"] = "request"
    """Who answers a call whose decision is ``ask``: ``request`` (the call's ``"approve": "once"``,
    else ``approval_unavailable``) or ``browser`` (the call waits for a person's answer on the
    settings page or ``POST /api/approvals/{id}``; ``"approve"`` is then ignored)."""


class SessionWarning(_Response):
    """One server a session's runtime left out."""

    server: str
    """The connector name."""
    field: str
    """The dotted field that failed (``servers.<name>.args``); never its value."""
    message: str


class SessionView(_Response):
    """One open session (``patchbay.runtime.sessions.SessionInfo``)."""

    session_id: str
    """``ses_…``; also the name of its event log (``<home>/sessions/<session_id>.jsonl``)."""
    project_id: str
    workspace: str
    state: SessionState
    """``ready``; ``building`` or ``restart_pending`` (a committed change is being applied: calls
    in flight finish, new calls wait for the rebuild); ``failed`` (the last rebuild failed: calls
    fail until a later change reloads it); ``closing``."""
    builds: int
    """How many times its runtime was built (1 after opening, one more per reload)."""
    in_flight: int
    """Calls running on its runtime now."""
    error: ErrorBody | None
    """Why the last build failed, while ``failed``."""
    warnings: list[SessionWarning] = []
    """Servers of the workspace its runtime left out (their entries failed the runtime's checks);
    the other servers run."""


class SessionList(_Response):
    sessions: list[SessionView]
    """In opening order."""


class SessionTool(_Response):
    """One tool the session's runtime offers (``patchbay.runtime.RuntimeTool``)."""

    name: str
    """The canonical name (``mcp.<connector>.<tool>``): what ``call`` takes."""
    wire_name: str
    """The name for model APIs that forbid dots (``mcp__<connector>__<tool>``); ``call`` takes it too."""
    connector: str | None
    tool: str
    """The server's own tool name."""
    title: str | None
    description: str | None
    decision: GrantDecision
    """``allow``; ``ask`` (a call needs ``"approve": "once"``, else it fails with
    ``approval_unavailable``); ``deny``."""
    risk: str
    """``read``, ``destructive`` or ``network`` (from the tool's annotations)."""
    input_schema: dict[str, Any]
    """The JSON Schema of the arguments (``{}`` when unknown)."""
    annotations: dict[str, Any] | None
    name_flag: str | None = None
    """Why the server's name for the tool is flagged (outside MCP's ``[A-Za-z0-9_.-]``, 1-128,
    or starting ``mcp.``: a possible lookalike); null for a clean name."""


class SessionTools(_Response):
    """``GET /api/sessions/{session_id}/tools``: every visible tool of every enabled connector
    that could be connected (one that cannot contributes none)."""

    session_id: str
    tools: list[SessionTool]


class ToolCallRequest(_Request):
    """``POST /api/sessions/{session_id}/call``."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}},
                {"tool": "mcp.git.git_status", "arguments": {"repo_path": "."}, "approve": "once"},
            ]
        }
    )

    tool: Annotated[str, Field(min_length=1, max_length=1024)]
    """Canonical name (``mcp.<connector>.<tool>``) or wire name."""
    arguments: Annotated[dict[str, Any], Field(default_factory=dict)]
    """The tool's arguments (a JSON object)."""
    approve: Literal["once"] | None = None
    """``once``: approve this call if its decision is ``ask`` (as ``patchbay call --yes``).
    Without it a call that asks fails with ``approval_unavailable``: the API has no one to ask.
    It never lifts a ``deny``."""


class ToolCallOutcome(_Response):
    """A tool call's result (``patchbay.runtime.ToolCallResult``), bounded by the output guard."""

    session_id: str
    tool_call_id: str
    """The ``toolCallId`` of its events in the session's event log."""
    name: str
    """The canonical tool name."""
    model_text: str
    """The text to hand on to a model: MCP output is untrusted, so it starts with
    ``[mcp:<connector>:<tool>]`` and a newline."""
    content: list[dict[str, Any]]
    """The content blocks (MCP wire form); a head + tail preview when ``truncated``."""
    structured_content: dict[str, Any] | None
    size_bytes: int
    """Size of the whole result (before any cut)."""
    truncated: bool
    """The result was over the output limits and was cut; the whole of it is the artifact."""
    artifact_id: str | None
    """``sha256:<hex>`` of the whole result in the artifact store, when ``truncated``."""


class SessionClosed(_Response):
    session_id: str
    closed: bool


class SessionEvents(_Response):
    """``GET /api/sessions/{session_id}/events``: one page of a session's event log, open or closed,
    in ``seq`` order."""

    session_id: str
    events: list[dict[str, Any]]
    """Events as logged: ``seq``, ``type``, ``ts``, ``sessionId``, ``payload`` (redacted)."""
    next_after_seq: int
    """Pass it as ``after_seq`` for the next page (the seq of the last event here, or the
    ``after_seq`` asked for when there was none)."""
    has_more: bool
    """Whether more events were already logged after this page."""
