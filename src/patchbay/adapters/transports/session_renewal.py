"""Streamable HTTP sessions that outlive the server forgetting them.

A server that restarts or expires a session answers 404 to the old ``Mcp-Session-Id``, which the
SDK's transport keeps. :func:`renewing_streamable_http` relays between the SDK ``Client`` and one
SDK transport at a time; on such a 404 (noted by the :class:`SessionExpiry` response hook) it opens
a new transport, replays ``initialize`` and ``notifications/initialized`` and resends the failed
request once. A second 404 or a failed ``initialize`` fails the request; other requests in flight
on the old session fail with an error naming the expiry, never resent.

Design: docs/connections.md
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from patchbay.adapters.transports.sdk_private import (
    ContextReceiveStream,
    TransportStreams,
    create_context_streams,
    send_in_context,
)

__all__ = ["SessionExpiry", "renewing_streamable_http"]

_SESSION_HEADER = "mcp-session-id"
_RENEWAL_ID = "patchbay-session-renewal-"
_CLOSE_GRACE = 5.0  # seconds the last transport gets to end its session (DELETE) on close


@dataclass
class SessionExpiry:
    """What the httpx2 response hook saw: requests answered 404 while carrying a session id.

    Attributes:
        expired: JSON-RPC ids of those requests (removed once the relay has handled them).
        renewals: how many times a new session was initialized.
    """

    expired: set[types.RequestId] = field(default_factory=set)
    renewals: int = 0

    async def hook(self, response: httpx2.Response) -> None:
        """The httpx2 ``response`` event hook (install it on the client the SDK uses)."""
        request = response.request
        if response.status_code != 404 or request.method != "POST" or _SESSION_HEADER not in request.headers:
            return
        with contextlib.suppress(httpx2.RequestNotRead, ValueError, TypeError):
            body = json.loads(request.content)
            if isinstance(body, dict) and isinstance(body.get("id"), str | int):
                self.expired.add(body["id"])


@asynccontextmanager
async def renewing_streamable_http(
    url: str, *, http_client: httpx2.AsyncClient, expiry: SessionExpiry
) -> AsyncIterator[TransportStreams]:
    """The SDK's Streamable HTTP transport, re-created whenever the server forgets the session.

    Args:
        url: the endpoint.
        http_client: the (guarded) httpx2 client every SDK transport uses; ``expiry.hook`` must
            be among its ``response`` event hooks.
        expiry: the hook's record.

    Yields ``(read_stream, write_stream)`` for an ``mcp.Client``. Connect failures surface as
    from ``streamable_http_client`` (an ``ExceptionGroup`` wrapping ``httpx2`` errors).
    """
    # The SDK runs each outgoing message in its sender's context (a request's timeout clock
    # travels there): the context streams carry it across the relay.
    up_send, up_receive = create_context_streams[SessionMessage](0)
    down_send, down_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    relay = _Relay(url, http_client, expiry, up_receive, down_send)
    async with anyio.create_task_group() as group, up_send, down_receive:
        await group.start(relay.run)
        try:
            yield down_receive, up_send
        finally:
            # Let the current SDK transport close on its own (it ends the session with a DELETE),
            # within a bound; then whatever is left is cancelled.
            relay.stop()
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_GRACE):
                await relay.done.wait()
            group.cancel_scope.cancel()


def _id_of(message: types.JSONRPCMessage) -> types.RequestId | None:
    return getattr(message, "id", None)


class _Renewed(Exception):
    """Internal: the current SDK transport is to be replaced (its session expired)."""

    def __init__(self, failed: SessionMessage):
        self.failed = failed


class _Relay:
    """Carries messages between the ``Client`` and the current SDK transport (one task each way)."""

    def __init__(
        self,
        url: str,
        http_client: httpx2.AsyncClient,
        expiry: SessionExpiry,
        up: ContextReceiveStream[SessionMessage],
        down: MemoryObjectSendStream[SessionMessage | Exception],
    ):
        self._url = url
        self._http = http_client
        self._expiry = expiry
        self._up = up
        self._down = down
        self._initialize: SessionMessage | None = None
        self._initialized: SessionMessage | None = None
        self._pending: dict[types.RequestId, SessionMessage] = {}
        self._resent: set[types.RequestId] = set()
        self._inner_write: Any = None
        self._open = anyio.Event()
        self._ids = itertools.count(1)
        self._relaying = anyio.CancelScope()
        self._stopping = False
        self.done = anyio.Event()
        """Set once the relay has closed its last SDK transport."""

    def stop(self) -> None:
        """Stop relaying; the current SDK transport then closes normally."""
        self._stopping = True
        self._relaying.cancel()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the SDK transports (each is entered and exited in this task, as the SDK needs)."""
        resend: SessionMessage | None = None
        try:
            async with self._down, self._up, anyio.create_task_group() as group:
                group.start_soon(self._pump_up)
                while True:
                    async with streamable_http_client(self._url, http_client=self._http) as (inner_read, inner_write):
                        if resend is None:
                            task_status.started()
                        self._relaying = anyio.CancelScope()  # a scope is entered once: one per transport
                        if self._stopping:
                            self._relaying.cancel()
                        try:
                            with self._relaying:
                                if resend is not None:
                                    await self._renew(inner_read, inner_write, resend)
                                self._inner_write = inner_write
                                self._open.set()
                                await self._pump_down(inner_read)
                        except _Renewed as renewal:
                            self._open = anyio.Event()
                            self._inner_write = None
                            resend = renewal.failed
                            await self._abandon_pending(except_id=_id_of(resend.message))
                            continue
                    # Stopped, or the server's stream ended: closing ``down`` shows the client the end.
                    group.cancel_scope.cancel()
                    return
        finally:
            self.done.set()

    async def _pump_up(self) -> None:
        """Client → server. Waits while a session is being renewed."""
        async for message in self._up:
            inner = message.message
            request_id: types.RequestId | None = None
            if isinstance(inner, types.JSONRPCRequest):
                if inner.method == "initialize":
                    self._initialize = message
                request_id = inner.id
                self._pending[request_id] = message
            elif isinstance(inner, types.JSONRPCNotification) and inner.method == "notifications/initialized":
                self._initialized = message
            elif isinstance(inner, types.JSONRPCNotification) and inner.method == "notifications/cancelled":
                # A cancelled request may never be answered: forget it.
                self._pending.pop((inner.params or {}).get("requestId"), None)  # type: ignore[arg-type]
            sender = self._up.last_context
            while True:
                if not self._open.is_set():  # a set Event's wait() still yields once per message
                    await self._open.wait()
                if await self._forward(message, sender):
                    break
                # The session was replaced under this send: a request that was not failed
                # meanwhile goes to the new one; anything else is dropped with the old one.
                if request_id is None or request_id not in self._pending:
                    break

    async def _forward(self, message: SessionMessage, sender: contextvars.Context | None) -> bool:
        """Send ``message`` to the current SDK transport in ``sender``'s context; False if that
        transport closed meanwhile."""
        try:
            if sender is None:
                await self._inner_write.send(message)
            else:
                await send_in_context(self._inner_write, sender, message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def _pump_down(self, inner_read: Any) -> None:
        """Server → client, until the stream ends.

        Raises:
            _Renewed: a request came back failed because the server forgot the session.
        """
        async for message in inner_read:
            # Only answers: a server's own request (sampling, elicitation) has ids of its own.
            if isinstance(message, SessionMessage) and isinstance(
                message.message, types.JSONRPCResponse | types.JSONRPCError
            ):
                request_id = _id_of(message.message)
                if request_id is not None and request_id in self._pending:
                    if isinstance(message.message, types.JSONRPCError) and request_id in self._expiry.expired:
                        self._expiry.expired.discard(request_id)
                        if request_id not in self._resent and self._initialize is not None:
                            raise _Renewed(self._pending[request_id])
                        message = _failed(request_id, "the server forgot the new session too (HTTP 404 twice)")
                    self._pending.pop(request_id, None)
                    self._resent.discard(request_id)
            await self._down.send(message)

    async def _renew(self, inner_read: Any, inner_write: Any, failed: SessionMessage) -> None:
        """Initialize a new session on a fresh SDK transport and resend ``failed`` once.

        When the new ``initialize`` does not succeed, ``failed`` fails with an error saying so.
        """
        assert self._initialize is not None
        original = self._initialize.message
        assert isinstance(original, types.JSONRPCRequest)
        renewal_id = f"{_RENEWAL_ID}{next(self._ids)}"
        replay = original.model_copy(update={"id": renewal_id})
        await inner_write.send(SessionMessage(replay))
        answer: types.JSONRPCMessage | None = None
        async for message in inner_read:
            if isinstance(message, SessionMessage) and _id_of(message.message) == renewal_id:
                answer = message.message
                break
            await self._down.send(message)  # whatever else the server says goes up as usual
        request_id = _id_of(failed.message)
        assert request_id is not None
        if not isinstance(answer, types.JSONRPCResponse):
            why = answer.error.message if isinstance(answer, types.JSONRPCError) else "no answer"
            self._pending.pop(request_id, None)
            await self._down.send(_failed(request_id, f"a new session could not be initialized ({why})"))
            return
        self._expiry.renewals += 1
        if self._initialized is not None:
            await inner_write.send(self._initialized)
        self._resent.add(request_id)
        await inner_write.send(failed)

    async def _abandon_pending(self, *, except_id: types.RequestId | None) -> None:
        """Fail the requests still in flight on an expired session (they are never re-sent)."""
        for request_id in [r for r in self._pending if r != except_id]:
            self._pending.pop(request_id)
            self._resent.discard(request_id)
            await self._down.send(_failed(request_id, "it was in flight when the server's session expired"))


def _failed(request_id: types.RequestId, why: str) -> SessionMessage:
    error = types.ErrorData(code=types.INVALID_REQUEST, message=f"session expired: {why}")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
