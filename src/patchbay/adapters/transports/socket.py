"""Unix domain socket transport: newline-delimited JSON-RPC, the stdio framing over a socket.

The SDK has no socket transport (shared/notes/mcp-sdk-2.3-client.md, section 1.6), so this mirrors
``mcp.client.stdio.stdio_client``'s stream contract: it yields ``(read_stream, write_stream)`` of
``SessionMessage | Exception`` / ``SessionMessage`` and parses with the SDK's own message adapter.
Closing it closes the socket; pending requests then fail with CONNECTION_CLOSED in the session.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ByteStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage

from patchbay.adapters.transports.budget import BudgetLease, ByteBudget, ResultClaim, current_claim, process_budget
from patchbay.adapters.transports.sdk_private import TransportStreams
from patchbay.core.errors import ErrorCode, ProbeError
from patchbay.core.models import SocketTarget

__all__ = ["SocketLink", "check_socket_ownership", "ndjson_streams", "open_socket"]

MAX_LINE_BYTES = 64 * 1024 * 1024
_READ_BYTES = 64 * 1024
_logger = logging.getLogger(__name__)


@dataclass
class SocketLink:
    """A live Unix-socket connection's streams."""

    streams: TransportStreams
    path: str

    @property
    def http_status(self) -> None:
        return None

    def stderr_tail(self, known_secrets: tuple[str, ...] = ()) -> str:
        return ""

    def limit_exceeded(self) -> None:
        return None

    async def wait_limit_exceeded(self) -> None:
        return None


def check_socket_ownership(path: str) -> None:
    """Refuse a socket another user could have planted or could hijack.

    The socket must be owned by the current user and not writable by others; its directory must
    belong to the current user (or root) and, if others may write to it, carry the sticky bit.
    A missing path is left to the connect attempt (``server_closed``).

    Raises:
        ProbeError: ``invalid_config`` naming what is wrong.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ProbeError(f"cannot inspect {path}: {exc.strerror or exc}", code=ErrorCode.INVALID_CONFIG) from None
    uid = os.getuid()
    if not stat.S_ISSOCK(info.st_mode):
        raise ProbeError(f"{path} is not a socket", code=ErrorCode.INVALID_CONFIG, details={"field": "socket_path"})
    if info.st_uid != uid:
        raise ProbeError(
            f"{path} belongs to uid {info.st_uid}, not to this user (uid {uid})",
            code=ErrorCode.INVALID_CONFIG,
            details={"field": "socket_path"},
        )
    if info.st_mode & stat.S_IWOTH:
        raise ProbeError(
            f"{path} is writable by other users", code=ErrorCode.INVALID_CONFIG, details={"field": "socket_path"}
        )
    parent = os.stat(os.path.dirname(path) or "/")
    if parent.st_uid not in (uid, 0):
        raise ProbeError(
            f"the directory of {path} belongs to uid {parent.st_uid}",
            code=ErrorCode.INVALID_CONFIG,
            details={"field": "socket_path"},
        )
    if parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
        raise ProbeError(
            f"the directory of {path} is writable by other users",
            code=ErrorCode.INVALID_CONFIG,
            details={"field": "socket_path"},
        )


@asynccontextmanager
async def open_socket(target: SocketTarget) -> AsyncIterator[SocketLink]:
    """Connect to the server socket at ``target.path``.

    Raises:
        ProbeError: ``invalid_config`` when the path is not a socket owned by this user and closed
            to writes by others (a socket can share tool state and file access); ``server_closed``
            when nothing listens there (missing file, refused).
    """
    check_socket_ownership(target.path)
    try:
        sock = await anyio.connect_unix(target.path)
    except FileNotFoundError:
        raise ProbeError(f"no socket at {target.path}", code=ErrorCode.SERVER_CLOSED) from None
    except OSError as exc:
        raise ProbeError(
            f"cannot connect to {target.path}: {exc.strerror or exc}", code=ErrorCode.SERVER_CLOSED
        ) from None

    async with sock, ndjson_streams(sock) as streams:
        yield SocketLink(streams=streams, path=target.path)


class _ClaimingWriter:
    """The write stream the session gets: it runs in the caller's task, so it can note under
    which :class:`ResultClaim` each request goes out (``claims``: request id -> claim)."""

    def __init__(self, stream: MemoryObjectSendStream[SessionMessage], claims: dict[Hashable, ResultClaim]):
        self._stream = stream
        self._claims = claims

    async def send(self, item: SessionMessage, /) -> None:
        claim = current_claim()
        if claim is not None and isinstance(item.message, types.JSONRPCRequest):
            claim.register(self._claims, coerce_request_id(item.message.id))
        await self._stream.send(item)

    def close(self) -> None:
        self._stream.close()

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _ClaimingWriter:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


def _response_id(message: SessionMessage | Exception) -> Hashable | None:
    if isinstance(message, SessionMessage) and isinstance(message.message, types.JSONRPCResponse | types.JSONRPCError):
        request_id = message.message.id
        return None if request_id is None else coerce_request_id(request_id)
    return None


@asynccontextmanager
async def ndjson_streams(
    sock: ByteStream, *, close: Callable[[], Awaitable[None]] | None = None, budget: ByteBudget | None = None
) -> AsyncIterator[TransportStreams]:
    """Frame a byte stream as newline-delimited JSON-RPC and yield SDK session streams.

    Works for either end (client or server): messages read become ``SessionMessage`` (parse
    errors are delivered as exception values, like the SDK's stdio transport); messages written
    are serialised by alias, one per line. Reading is linear in the message size (one growing
    buffer, one copy per line), so a 50 MiB line costs about 2x its size at peak. A line longer
    than ``MAX_LINE_BYTES`` is delivered as ``anyio.DelimiterNotFound`` and reading stops.

    Args:
        sock: the byte stream (a socket, or a process's stdin+stdout stapled together).
        close: run (shielded) on exit instead of ``sock.aclose()``, while the reader still
            drains; the stdio transport uses it for the stdin-EOF / SIGTERM / SIGKILL sequence.
        budget: the in-flight byte budget the reader charges for the message it is reading
            (:mod:`patchbay.adapters.transports.budget`); default the process's budget. When it is
            used up the reader stops reading until other messages were handed on. A response
            larger than the budget's ``share`` to a request sent inside
            :func:`~patchbay.adapters.transports.budget.holding_results` stays charged until that
            block ends; every other message is released once handed on.
    """
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    raw_write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    claims: dict[Hashable, ResultClaim] = {}
    write_stream = _ClaimingWriter(raw_write_stream, claims)
    account = budget if budget is not None else process_budget()
    lease = account.lease()

    async def next_line(buffer: bytearray) -> bytes | None:
        """Take the next line out of ``buffer``, reading more as needed; None at EOF. Before
        each read the bytes held are charged to the budget, which may wait (backpressure).

        Raises:
            anyio.DelimiterNotFound: a line longer than ``MAX_LINE_BYTES``.
        """
        scanned = 0
        while (end := buffer.find(b"\n", scanned)) < 0:
            if len(buffer) > MAX_LINE_BYTES:
                raise anyio.DelimiterNotFound(MAX_LINE_BYTES)
            scanned = len(buffer)
            await lease.hold(len(buffer))
            try:
                buffer += await sock.receive(_READ_BYTES)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None
        # One copy out (bytes: the parser would copy a bytearray again), then the big buffer is
        # freed at once rather than kept at its largest size for the next message.
        with memoryview(buffer) as view:
            line = bytes(view[:end])
            rest = bytes(view[end + 1 :])
        buffer.clear()
        buffer += rest
        return line

    async def reader() -> None:
        deliver = True
        buffer = bytearray()
        try:
            async with read_writer:
                while True:
                    try:
                        line = await next_line(buffer)
                    except anyio.DelimiterNotFound as exc:
                        if deliver:
                            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                                await read_writer.send(exc)
                        return
                    if line is None:
                        return
                    if not deliver or not line.strip():
                        lease.release()
                        continue  # once the session is gone, keep draining so a flushing peer can exit
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:
                        _logger.debug("Failed to parse JSONRPC message from server: %s", exc)
                        message = exc
                    del line  # the parsed message is all that stays (peak ~2x a big line, not 3x)
                    kept = keep_for_call(message)
                    try:
                        await read_writer.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        deliver = False
                    # Not kept alive by this frame until the next message: an idle connection would
                    # hold its last result (a big one: its whole size) for as long as it stays idle.
                    del message
                    if kept is None:
                        # Parsed and handed on: the bytes of this message are held no longer.
                        lease.release()
        finally:
            lease.release()
            claims.clear()

    def keep_for_call(message: SessionMessage | Exception) -> BudgetLease | None:
        """Hand a big response's lease to the claim of the call that waits for it (the reader
        goes on with a new lease); None when nobody claims it (it is released once handed on)."""
        nonlocal lease
        request_id = _response_id(message)
        claim = claims.pop(request_id, None) if request_id is not None else None
        if claim is None or lease.held <= account.share:
            return None
        assert isinstance(message, SessionMessage)
        reply = message.message
        # The result dict is the one the session hands to the call; once the call is done nobody
        # reads it, but the SDK's receive loop still refers to this message until the next one.
        forget = (
            reply.result.clear if isinstance(reply, types.JSONRPCResponse) and isinstance(reply.result, dict) else None
        )
        if not claim.keep(lease, forget):
            return None
        kept, lease = lease, account.lease()
        return kept

    async def writer() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await sock.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()  # the reader stops delivering and only drains from here
                await (close() if close is not None else sock.aclose())
                for stream in (read_stream, raw_write_stream, read_writer, write_reader):
                    await stream.aclose()
            tg.cancel_scope.cancel()
