"""Every private name of the ``mcp`` SDK and of ``httpx2`` that Patchbay uses, named once.

The SDK exports no public name for these, but Patchbay needs them: the stream pair a transport
yields (``TransportStreams``), the context-carrying memory streams the Streamable HTTP client is
built on (renewing a forgotten session feeds them), and httpx2's own SSE framing (the egress guard
reads the ``endpoint`` event of a legacy SSE stream the way the SDK will). Other modules import
them from here only, and ``tests/adapters/transports/test_sdk_private.py`` checks that the
installed versions are the ones in :data:`TESTED_WITH` and that each name still has the shape used,
so an upgrade that moves or changes one fails there, loudly, and in one place.
"""

from __future__ import annotations

from httpx2._sse import _SSEParser as SSEParser
from mcp.client._transport import TransportStreams
from mcp.shared._context_streams import ContextReceiveStream, create_context_streams

__all__ = ["TESTED_WITH", "ContextReceiveStream", "SSEParser", "TransportStreams", "create_context_streams"]

TESTED_WITH: dict[str, str] = {"mcp": "2.3.0", "httpx2": "2.16.2"}
"""The distributions (and exact versions) whose private names this module was checked against."""
