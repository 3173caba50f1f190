"""Transports: how Patchbay reaches an MCP server, all through the official ``mcp`` SDK.

One entry point, :func:`open_client`, opens the right transport for a connector target and yields
a connected :class:`ClientConnection` (an ``mcp.Client`` after the initialize handshake, plus the
transport's diagnostics: stderr tail, process group, last HTTP status). It must be entered and
exited in the same task (the SDK's cancel-scope rule), so long-lived connections each get their
own task in the runtime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypedDict, Unpack

import anyio
import httpx2
from mcp import Client
from mcp.client.session import ElicitationFnT, ListRootsFnT, LoggingFnT, MessageHandlerFnT, SamplingFnT
from mcp_types import Implementation

from patchbay.adapters.transports.egress import EgressPolicy
from patchbay.adapters.transports.errors import classify, leaf_exceptions
from patchbay.adapters.transports.exit_status import exit_failure
from patchbay.adapters.transports.http import HttpLink, open_http
from patchbay.adapters.transports.sdk_private import TransportStreams
from patchbay.adapters.transports.socket import SocketLink, open_socket
from patchbay.adapters.transports.stdio import StderrTail, StdioLink, open_stdio, process_group_alive, resolve_command
from patchbay.adapters.transports.watch import WatchedReceiveStream
from patchbay.core.errors import ErrorCode
from patchbay.core.models import ConnectorTarget, HttpTarget, ResourceLimits, SocketTarget, StdioTarget

__all__ = [
    "ClientConnection",
    "ClientOptions",
    "EgressPolicy",
    "HttpLink",
    "Link",
    "SocketLink",
    "StderrTail",
    "StdioLink",
    "classify",
    "leaf_exceptions",
    "open_client",
    "open_link",
    "process_group_alive",
    "resolve_command",
]


class Link(Protocol):
    """An open transport under an ``mcp.Client``: its streams and what it can tell about the server.

    :class:`StdioLink`, :class:`HttpLink` and :class:`SocketLink` implement it; what a transport
    cannot know is empty (``""``, None).
    """

    @property
    def streams(self) -> TransportStreams | None:
        """The SDK's ``(read, write)`` pair; None only before an opener has yielded the link."""
        ...

    @property
    def http_status(self) -> int | None:
        """The status of the last HTTP response (tells 401/403 from other failures)."""
        ...

    def stderr_tail(self, known_secrets: tuple[str, ...] = ()) -> str:
        """The end of a stdio server's stderr, redacted, ``known_secrets`` masked."""
        ...

    def limit_exceeded(self) -> str | None:
        """The resource limit that stopped a stdio server (``"cpu_seconds"``, ...), if one did."""
        ...

    async def wait_limit_exceeded(self) -> str | None:
        """:meth:`limit_exceeded` once the server had a moment to report it (after a crash)."""
        ...


@dataclass
class ClientConnection:
    """A connected SDK client and the transport link under it."""

    client: Client
    link: Link
    ended: anyio.Event
    """Set once the server's message stream ended (for stdio: the server exited)."""

    def stderr_tail(self, known_secrets: tuple[str, ...] = ()) -> str:
        """The redacted stderr tail of a stdio server ("" for other transports)."""
        return self.link.stderr_tail(known_secrets)

    @property
    def http_status(self) -> int | None:
        return self.link.http_status


@asynccontextmanager
async def open_link(
    target: ConnectorTarget,
    *,
    workspace: Path,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    stderr_tail_bytes: int = 16 * 1024,
    limits: ResourceLimits | None = None,
    egress: EgressPolicy | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[Link]:
    """Open the transport for ``target`` (no MCP handshake yet).

    ``limits`` apply to stdio only; ``egress`` (the connector's egress policy, default: no
    private addresses) and ``auth`` (its OAuth provider) to HTTP/SSE only -- see :func:`open_client`.
    """
    if isinstance(target, StdioTarget):
        async with open_stdio(
            target,
            workspace=workspace,
            env=env,
            stderr_tail_bytes=stderr_tail_bytes,
            limits=limits,
        ) as link:
            yield link
    elif isinstance(target, HttpTarget):
        async with open_http(target, headers=headers, egress=egress, auth=auth) as link:
            yield link
    elif isinstance(target, SocketTarget):
        async with open_socket(target) as link:
            yield link
    else:  # pragma: no cover - the discriminated union is closed
        raise TypeError(f"unknown target {target!r}")


class ClientOptions(TypedDict, total=False):
    """The ``mcp.Client`` options :func:`open_client` passes through (see ``mcp.Client``)."""

    read_timeout_seconds: float | None
    """Seconds a request waits for its response."""
    client_info: Implementation | None
    message_handler: MessageHandlerFnT | None
    elicitation_callback: ElicitationFnT | None
    logging_callback: LoggingFnT | None
    sampling_callback: SamplingFnT | None
    list_roots_callback: ListRootsFnT | None


@asynccontextmanager
async def _given(streams: TransportStreams) -> AsyncIterator[TransportStreams]:
    yield streams


@asynccontextmanager
async def open_client(
    target: ConnectorTarget,
    *,
    workspace: Path,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    stderr_tail_bytes: int = 16 * 1024,
    mode: str = "legacy",
    link_holder: list[Link] | None = None,
    limits: ResourceLimits | None = None,
    egress: EgressPolicy | None = None,
    auth: httpx2.Auth | None = None,
    **client_kwargs: Unpack[ClientOptions],
) -> AsyncIterator[ClientConnection]:
    """Open the transport and run the MCP handshake; yield the connected client.

    Args:
        target: the connector's validated target.
        workspace: canonical workspace root (stdio ``cwd`` is relative to it).
        env / headers: resolved (never stored) extras for stdio / HTTP.
        mode: the SDK ``Client`` mode; ``legacy`` runs the initialize handshake.
        link_holder: if given, the link is appended as soon as the transport is open, so a caller
            can read the stderr tail even when the handshake then fails.
        limits: setrlimit bounds for a stdio child (ignored for other transports).
        egress: the egress policy of an HTTP/SSE connector: pass
            ``EgressPolicy(allow_private=options.allow_private)``; default ``EgressPolicy()``
            refuses loopback, private and other non-public addresses. Ignored for stdio and sockets
            (their own traffic cannot be guarded).
        auth: the connector's OAuth provider (HTTP/SSE only; see :mod:`patchbay.adapters.oauth`).
        client_kwargs: passed to ``mcp.Client`` (callbacks, ``read_timeout_seconds``, ...).

    Raises:
        ProbeError: from the transport (``command_not_found``, ``spawn_failed``, ``server_closed``
            -- for a stdio server that exits during the handshake, with its exit status or signal
            and redacted stderr tail in the message;
            ``network_blocked`` as :class:`EgressBlocked`, possibly inside an ``ExceptionGroup``);
        anything else the SDK raises propagates; map it with :func:`classify`.
    """
    async with open_link(
        target,
        workspace=workspace,
        env=env,
        headers=headers,
        stderr_tail_bytes=stderr_tail_bytes,
        limits=limits,
        egress=egress,
        auth=auth,
    ) as link:
        if link_holder is not None:
            link_holder.append(link)
        # Every opener yields its link with the streams already open.
        assert link.streams is not None
        read_stream, write_stream = link.streams
        watched = WatchedReceiveStream(read_stream)
        shaken = False
        try:
            async with Client(_given((watched, write_stream)), mode=mode, **client_kwargs) as client:
                shaken = True
                yield ClientConnection(client=client, link=link, ended=watched.ended)
        except Exception as exc:
            # The SDK says only "Connection closed" when a server dies during the handshake.
            if shaken or not isinstance(link, StdioLink) or classify(exc)[0] != ErrorCode.SERVER_CLOSED:
                raise
            known = tuple(value for value in (env or {}).values() if value)
            raise await exit_failure(link, known) from exc
