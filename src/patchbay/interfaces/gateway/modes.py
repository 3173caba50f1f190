"""What a host sees through the gateway: direct tools or the one proxy tool, and the direct names.

``direct`` lists every visible tool under ``<connector>__<tool>``: the runtime's wire name
(``mcp__<connector>__<tool>``, 1-64 chars of ``[A-Za-z0-9_-]``, a deterministic hash suffix only
when it would be too long) without its ``mcp__`` prefix, which a host already puts in front of its
servers' tools. ``proxy`` offers the single ``mcp`` tool. ``auto`` picks ``direct`` while the
cached catalog has at most ``gateway_direct_max_tools`` offered tools and their definitions cost at
most ``gateway_direct_max_schema_tokens`` estimated tokens (compact JSON bytes / 4), else ``proxy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from patchbay.core.errors import UnacceptableSchema
from patchbay.core.schema_bounds import SchemaBounds
from patchbay.core.settings import Settings
from patchbay.runtime.tools.definitions import OfferedTool, compact_size, definition_for

__all__ = ["RUNTIME_WIRE_PREFIX", "GatewayMode", "choose_mode", "estimated_tokens", "gateway_name", "runtime_wire_name"]

GatewayMode = Literal["proxy", "direct", "auto"]
"""``--mode`` of ``patchbay gateway``."""

RUNTIME_WIRE_PREFIX = "mcp__"
"""What the runtime's wire names start with and the gateway's direct names leave out."""

_BYTES_PER_TOKEN = 4


def gateway_name(wire_name: str) -> str:
    """The direct name of a tool whose runtime wire name is ``wire_name``
    (``mcp__time__get_current_time`` → ``time__get_current_time``)."""
    return wire_name.removeprefix(RUNTIME_WIRE_PREFIX)


def runtime_wire_name(name: str) -> str:
    """The runtime wire name a direct name stands for (the inverse of :func:`gateway_name`)."""
    return RUNTIME_WIRE_PREFIX + name


def estimated_tokens(tools: Sequence[OfferedTool], settings: Settings) -> int:
    """Estimated tokens of the MCP-shape definitions of ``tools`` (``deny`` ones and unofferable
    schemas skipped): compact JSON bytes / 4, rounded up."""
    bounds = SchemaBounds.from_settings(settings)
    definitions = []
    for tool in tools:
        if tool.decision == "deny":
            continue
        try:
            definitions.append(definition_for(tool, "mcp", bounds))
        except UnacceptableSchema:
            continue
    return -(-compact_size(definitions) // _BYTES_PER_TOKEN)


def choose_mode(mode: GatewayMode, tools: Sequence[OfferedTool], settings: Settings) -> Literal["proxy", "direct"]:
    """The mode a gateway serves: ``mode`` itself unless it is ``auto`` (see the module docstring).

    Args:
        tools: the cached catalog (:meth:`Runtime.cached_tools`); nothing is contacted.
        settings: ``gateway_direct_max_tools`` and ``gateway_direct_max_schema_tokens``.
    """
    if mode != "auto":
        return mode
    offered = [tool for tool in tools if tool.decision != "deny"]
    if len(offered) > settings.gateway_direct_max_tools:
        return "proxy"
    if estimated_tokens(offered, settings) > settings.gateway_direct_max_schema_tokens:
        return "proxy"
    return "direct"
