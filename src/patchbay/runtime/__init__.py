"""The governed client runtime: ToolRouter → PermissionEngine → executor → MCP connections, with an
append-only session event log. The public door is :class:`Runtime`."""

from patchbay.runtime.calls import ToolCallResult
from patchbay.runtime.connection import ConnectionState, ServerConnection
from patchbay.runtime.events import EVENT_TYPES, EventLog, Redacted, new_session_id, read_events, session_log_path
from patchbay.runtime.permissions import (
    Actor,
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    PermissionEngine,
    Resolution,
)
from patchbay.runtime.router import Route, ToolRouter
from patchbay.runtime.runtime import LocalTool, Runtime, RuntimeTool

__all__ = [
    "EVENT_TYPES",
    "Actor",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "ConnectionState",
    "EventLog",
    "LocalTool",
    "PermissionEngine",
    "Redacted",
    "Resolution",
    "Route",
    "Runtime",
    "RuntimeTool",
    "ServerConnection",
    "ToolCallResult",
    "ToolRouter",
    "new_session_id",
    "read_events",
    "session_log_path",
]
