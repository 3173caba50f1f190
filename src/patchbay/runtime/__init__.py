"""The governed client runtime: ToolRouter → PermissionEngine → executor → MCP connections, with an
append-only session event log. The public door is :class:`Runtime`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchbay.runtime.calls.permissions import (
        Actor,
        ApprovalAnswer,
        ApprovalRequest,
        Approver,
        PermissionEngine,
        Resolution,
    )
    from patchbay.runtime.calls.result import ToolCallResult
    from patchbay.runtime.calls.router import Route, ToolRouter
    from patchbay.runtime.connection.server_connection import ConnectionState, ServerConnection
    from patchbay.runtime.events.log import (
        EVENT_TYPES,
        EventLog,
        Redacted,
        new_session_id,
        read_events,
        session_log_path,
    )
    from patchbay.runtime.runtime import LocalTool, Runtime, RuntimeTool

_EXPORTS = {
    "Actor": "patchbay.runtime.calls.permissions",
    "ApprovalAnswer": "patchbay.runtime.calls.permissions",
    "ApprovalRequest": "patchbay.runtime.calls.permissions",
    "Approver": "patchbay.runtime.calls.permissions",
    "ConnectionState": "patchbay.runtime.connection.server_connection",
    "EVENT_TYPES": "patchbay.runtime.events.log",
    "EventLog": "patchbay.runtime.events.log",
    "LocalTool": "patchbay.runtime.runtime",
    "PermissionEngine": "patchbay.runtime.calls.permissions",
    "Redacted": "patchbay.runtime.events.log",
    "Resolution": "patchbay.runtime.calls.permissions",
    "Route": "patchbay.runtime.calls.router",
    "Runtime": "patchbay.runtime.runtime",
    "RuntimeTool": "patchbay.runtime.runtime",
    "ServerConnection": "patchbay.runtime.connection.server_connection",
    "ToolCallResult": "patchbay.runtime.calls.result",
    "ToolRouter": "patchbay.runtime.calls.router",
    "new_session_id": "patchbay.runtime.events.log",
    "read_events": "patchbay.runtime.events.log",
    "session_log_path": "patchbay.runtime.events.log",
}
"""Where each public name lives. They are imported on first use (PEP 562): importing one module
of the package (the snapshot format the control plane writes, the session logs the CLI reads)
must not load the runtime and the MCP SDK behind it."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'patchbay.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
