"""The gateway's cancellable stdin reader."""

from __future__ import annotations

import os
import tempfile

import anyio
import pytest

from patchbay.interfaces.gateway.stdin import StdinLines, pollable_stdin

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_lines_come_with_their_newline_and_the_last_one_without() -> None:
    read, write = os.pipe()
    try:
        os.write(write, "one\ntwo é\nlast".encode())
        os.close(write)
        with anyio.fail_after(5):
            assert [line async for line in StdinLines(read)] == ["one\n", "two é\n", "last"]
    finally:
        os.close(read)


async def test_a_pending_read_is_stopped_by_a_cancellation() -> None:
    read, write = os.pipe()
    try:
        with anyio.fail_after(5):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:

                    async def first_line() -> None:
                        await StdinLines(read).__anext__()

                    group.start_soon(first_line)
                    await anyio.lowlevel.checkpoint()
                    scope.cancel()
        assert scope.cancelled_caught
    finally:
        os.close(read)
        os.close(write)


def test_only_pipes_and_sockets_are_polled() -> None:
    read, write = os.pipe()
    with tempfile.TemporaryFile() as regular:
        assert isinstance(pollable_stdin(read), StdinLines)
        assert pollable_stdin(regular.fileno()) is None
    os.close(read)
    os.close(write)
