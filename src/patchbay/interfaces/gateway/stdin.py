"""The gateway's stdin as lines that a cancellation can stop.

The SDK's ``stdio_server`` reads stdin through ``anyio.wrap_file``: each line is read in a worker
thread that a cancellation cannot interrupt, so a gateway told to stop (SIGTERM) would wait for the
host's next line or for stdin to close. :class:`StdinLines` waits for the pipe to be readable on the
event loop (``anyio.wait_readable``) and only then reads what is there, so stopping is immediate.
Used when stdin is a pipe, FIFO or socket (what a host gives); otherwise the SDK's own reader is.
"""

from __future__ import annotations

import os
import stat

import anyio

__all__ = ["StdinLines", "pollable_stdin"]

_CHUNK = 64 * 1024


class StdinLines:
    """``async for line in StdinLines(fd)``: the lines of ``fd`` (with their ``\\n``; decoded as
    UTF-8, invalid bytes replaced), until end of file.

    Args:
        fd: a readable pipe, FIFO or socket descriptor (not closed here).
    """

    def __init__(self, fd: int):
        self._fd = fd
        self._buffer = b""
        self._eof = False

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buffer and not self._eof:
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, _CHUNK)  # readable: returns what is there without blocking
            except BlockingIOError:
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
        if not self._buffer:
            raise StopAsyncIteration
        line, newline, self._buffer = self._buffer.partition(b"\n")
        return (line + newline).decode("utf-8", errors="replace")


def pollable_stdin(fd: int = 0) -> StdinLines | None:
    """A :class:`StdinLines` over ``fd`` when it is a pipe, FIFO or socket; None otherwise (a
    file or terminal: the SDK's reader is used)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    return StdinLines(fd) if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None
