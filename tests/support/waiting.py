"""Waiting on a real condition that has no event to wait on."""

from __future__ import annotations

from collections.abc import Callable

import anyio


async def wait_until(predicate: Callable[[], bool], *, within: float = 15.0) -> None:
    """Poll a real condition (a process state, a file, a connection state) until it holds.

    Raises ``TimeoutError`` after ``within`` seconds.
    """
    with anyio.fail_after(within):
        while not predicate():
            await anyio.sleep(0.01)
