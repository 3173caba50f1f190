"""The Patchbay gateway: one MCP server that an MCP host (Claude Desktop, Claude Code, Cursor, the
MCP Inspector...) spawns, exposing the workspace's projected, governed catalog.

:mod:`patchbay.interfaces.gateway.modes` decides what the host sees (direct tools or the one
proxy tool), :mod:`patchbay.interfaces.gateway.results` turns governed outcomes into MCP tool
results, :mod:`patchbay.interfaces.gateway.elicitation` relays upstream elicitation to the host
(:mod:`patchbay.interfaces.gateway.input_rounds`: as input rounds for 2026-07-28 hosts),
:mod:`patchbay.interfaces.gateway.server` is the SDK server over one
:class:`~patchbay.runtime.Runtime`, and :mod:`patchbay.interfaces.gateway.owner` owns that
runtime and reloads it when the projection changes. The HTTP endpoint is
:mod:`patchbay.interfaces.api.gateway_endpoint`. Design: docs/gateway.md.
"""

from __future__ import annotations

from patchbay.interfaces.gateway.modes import GatewayMode, choose_mode, gateway_name, runtime_wire_name
from patchbay.interfaces.gateway.server import GATEWAY_PROXY_DESCRIPTION, Gateway, serve_stdio

__all__ = [
    "GATEWAY_PROXY_DESCRIPTION",
    "Gateway",
    "GatewayMode",
    "choose_mode",
    "gateway_name",
    "runtime_wire_name",
    "serve_stdio",
]
