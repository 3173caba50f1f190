"""Expected event sequences of the runtime's event log."""

from __future__ import annotations

CALL_CHAIN = [
    "model.tool_call_requested",
    "permission.requested",
    "permission.resolved",
    "mcp.call.started",
    "tool.started",
    "mcp.call.completed",
    "tool.completed",
]
"""The seed 000 §6 event chain of one allowed MCP call."""
