"""Every private name of the ``mcp`` SDK and of ``httpx2`` that Patchbay uses, named once.

The SDK exports no public name for these, but Patchbay needs them: the stream pair a transport
yields (``TransportStreams``), the context-carrying memory streams the Streamable HTTP client is
built on (renewing a forgotten session feeds them, handing each message on in its sender's context
without a task of its own: :func:`send_in_context`), and httpx2's own SSE framing (the egress guard
reads the ``endpoint`` event of a legacy SSE stream the way the SDK will). Other modules import
them from here only, and ``tests/adapters/transports/test_sdk_private.py`` checks that the
installed versions are the ones in :data:`TESTED_WITH` and that each name still has the shape used,
so an upgrade that moves or changes one fails there, loudly, and in one place.
"""

from __future__ import annotations

import contextvars
from typing import TypeVar

from httpx2._sse import _SSEParser as SSEParser
from mcp.client._transport import TransportStreams
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams

__all__ = [
    "TESTED_WITH",
    "ContextReceiveStream",
    "ContextSendStream",
    "SSEParser",
    "TransportStreams",
    "create_context_streams",
    "send_in_context",
]

T = TypeVar("T")

TESTED_WITH: dict[str, str] = {"mcp": "2.3.0", "httpx2": "2.17.0"}
"""The distributions (and exact versions) whose private names this module was checked against."""


async def send_in_context(stream: ContextSendStream[T], context: contextvars.Context, item: T) -> None:
    """``await stream.send(item)`` as if called in ``context``: the receiver's ``last_context`` is
    ``context`` itself (the SDK copies a context on ``send``; this one is already a copy that no
    one else runs in). Saves the task a ``context.run(...)`` send would need.

    Raises:
        anyio.ClosedResourceError / anyio.BrokenResourceError: as ``stream.send``.
    """
    await stream._inner.send((context, item))
