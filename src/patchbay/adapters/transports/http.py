"""Remote transports: Streamable HTTP and legacy HTTP+SSE, both the SDK's own clients.

The SDK follows redirects only within the endpoint's origin and never downgrades https; we do not
loosen that. Headers (and, later, auth) are configured on the httpx2 client the SDK uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from patchbay.core.models import HttpTarget

__all__ = ["HttpLink", "open_http"]

_CONNECT_TIMEOUT = 30.0
_STREAM_READ_TIMEOUT = 300.0


@dataclass
class HttpLink:
    """A live remote connection's streams."""

    streams: TransportStreams | None
    url: str
    last_status: int | None = None
    """The status of the most recent HTTP response (used to tell 401/403 from other failures)."""


@asynccontextmanager
async def open_http(target: HttpTarget, *, headers: dict[str, str] | None = None) -> AsyncIterator[HttpLink]:
    """Open ``target`` with the SDK's Streamable HTTP or SSE client.

    Args:
        headers: extra request headers (resolved credential values arrive here, never stored).

    Connect failures surface from the SDK (``httpx2.ConnectError`` and friends, possibly inside
    an ``ExceptionGroup``); :func:`patchbay.adapters.transports.errors.classify` maps them.
    """
    timeout = httpx2.Timeout(_CONNECT_TIMEOUT, read=_STREAM_READ_TIMEOUT)
    link = HttpLink(streams=None, url=target.url)

    async def remember_status(response: httpx2.Response) -> None:
        link.last_status = response.status_code

    def client_factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, event_hooks={"response": [remember_status]}
        )

    if target.transport == "sse":
        async with sse_client(
            target.url,
            headers=headers,
            timeout=_CONNECT_TIMEOUT,
            sse_read_timeout=_STREAM_READ_TIMEOUT,
            httpx_client_factory=client_factory,
        ) as streams:
            link.streams = streams
            yield link
        return
    async with client_factory(headers=headers, timeout=timeout) as http_client:
        async with streamable_http_client(target.url, http_client=http_client) as streams:
            link.streams = streams
            yield link
