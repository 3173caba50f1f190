"""Noticing that a server's message stream ended, with no request in flight.

The SDK fails pending requests with ``CONNECTION_CLOSED`` when the transport's read stream ends, but
it has no hook for "the stream ended while nothing was pending" — exactly the moment a supervisor
needs to see a crashed stdio server (the child exits, the client notices and emits
``mcp.server.crashed``). :class:`WatchedReceiveStream` forwards the transport's read stream to the
SDK unchanged and sets an event once it is exhausted or closed.
"""

from __future__ import annotations

from typing import Any

import anyio

__all__ = ["WatchedReceiveStream"]


class WatchedReceiveStream:
    """A transparent proxy of an anyio receive stream that sets :attr:`ended` at its end.

    Args:
        stream: the transport's read stream (``SessionMessage | Exception`` items).

    Every attribute the SDK looks up (``last_context`` and the like) is forwarded.
    """

    def __init__(self, stream: Any):
        self._stream = stream
        self.ended = anyio.Event()
        """Set when the stream raised ``EndOfStream``/``ClosedResourceError`` or was closed."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.ended.set()
            raise

    def __aiter__(self) -> WatchedReceiveStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self.ended.set()
        await self._stream.aclose()

    def close(self) -> None:
        self.ended.set()
        self._stream.close()

    async def __aenter__(self) -> WatchedReceiveStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
