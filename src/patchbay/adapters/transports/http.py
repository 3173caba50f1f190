"""Remote transports: Streamable HTTP and legacy HTTP+SSE, both the SDK's own clients.

Every request goes through the egress guard (:mod:`patchbay.adapters.transports.egress`): the SDK is
handed a guarded ``httpx2`` client (Streamable HTTP) or a factory of them (SSE), pinned to the
endpoint's origin. The SDK follows redirects only within the endpoint's origin and never downgrades
https; the guard refuses a cross-origin redirect outright and checks every followed one again.
Headers (and, later, auth) are configured on that client. A Streamable HTTP session the server
forgot (HTTP 404) is replaced by a new one and the failed request sent once more
(:mod:`patchbay.adapters.transports.session_renewal`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import httpx2
from mcp.client.sse import sse_client

from patchbay.adapters.transports.egress import EgressGuard, EgressPolicy, client_factory
from patchbay.adapters.transports.sdk_private import TransportStreams
from patchbay.adapters.transports.session_renewal import SessionExpiry, renewing_streamable_http
from patchbay.core.models import HttpTarget

__all__ = ["GuardedAuth", "HttpLink", "open_http"]

_CONNECT_TIMEOUT = 30.0
_STREAM_READ_TIMEOUT = 300.0


@runtime_checkable
class GuardedAuth(Protocol):
    """An ``httpx2.Auth`` whose own requests (OAuth discovery, token) go through a connection's
    egress guard once it is bound (:class:`patchbay.adapters.oauth.guarded.GuardedFlow`)."""

    def bind_guard(self, guard: EgressGuard) -> None: ...


@dataclass
class HttpLink:
    """A live remote connection's streams."""

    streams: TransportStreams | None
    url: str
    last_status: int | None = None
    """The status of the most recent HTTP response (used to tell 401/403 from other failures)."""
    guard: EgressGuard | None = field(default=None, repr=False)
    """The egress guard of this connection (its ``approved``/``blocked`` request counts)."""
    sessions: SessionExpiry | None = field(default=None, repr=False)
    """Streamable HTTP only: session expiries seen and ``renewals`` made (see
    :mod:`patchbay.adapters.transports.session_renewal`)."""

    @property
    def http_status(self) -> int | None:
        return self.last_status

    def stderr_tail(self, known_secrets: tuple[str, ...] = ()) -> str:
        return ""

    def limit_exceeded(self) -> None:
        return None

    async def wait_limit_exceeded(self) -> None:
        return None


@asynccontextmanager
async def open_http(
    target: HttpTarget,
    *,
    headers: dict[str, str] | None = None,
    egress: EgressPolicy | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[HttpLink]:
    """Open ``target`` with the SDK's Streamable HTTP or SSE client, behind the egress guard.

    Args:
        headers: extra request headers (resolved credential values arrive here, never stored).
        egress: the connector's egress policy; default :class:`EgressPolicy` ``()``: private,
            loopback and other non-public addresses are refused.
        auth: an ``httpx2.Auth`` for every request (the connector's OAuth provider,
            :mod:`patchbay.adapters.oauth`); one with ``bind_guard`` is given this connection's
            guard, so its discovery and token requests are guarded and audited too.

    Connect failures surface from the SDK (``httpx2.ConnectError`` and friends, possibly inside
    an ``ExceptionGroup``); a refused request is
    :class:`~patchbay.core.errors.EgressBlocked` (``network_blocked``), and nothing
    was sent. :func:`patchbay.adapters.transports.errors.classify` maps them all.

    Raises:
        EgressBlocked: the URL itself breaks the rules (not absolute http(s), userinfo).
    """
    guard = EgressGuard(egress or EgressPolicy(), origins=[target.url])
    timeout = httpx2.Timeout(_CONNECT_TIMEOUT, read=_STREAM_READ_TIMEOUT)
    link = HttpLink(streams=None, url=target.url, guard=guard)
    if isinstance(auth, GuardedAuth):
        auth.bind_guard(guard)

    async def remember_status(response: httpx2.Response) -> None:
        link.last_status = response.status_code

    factory = client_factory(
        guard, event_hooks={"response": [remember_status]}, sse_endpoints=target.transport == "sse"
    )
    if target.transport == "sse":
        async with sse_client(
            target.url,
            headers=headers,
            timeout=_CONNECT_TIMEOUT,
            sse_read_timeout=_STREAM_READ_TIMEOUT,
            httpx_client_factory=factory,
            auth=auth,
        ) as streams:
            link.streams = streams
            yield link
        return
    link.sessions = SessionExpiry()
    renewing = client_factory(guard, event_hooks={"response": [remember_status, link.sessions.hook]})
    async with renewing(headers=headers, timeout=timeout, auth=auth) as http_client:
        async with renewing_streamable_http(target.url, http_client=http_client, expiry=link.sessions) as streams:
            link.streams = streams
            yield link
