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


def wait_until_sync(predicate: Callable[[], bool], *, within: float = 30.0) -> None:
    """:func:`wait_until` for plain (non-async) tests, such as the browser tests.

    Raises ``TimeoutError`` after ``within`` seconds.
    """
    import time

    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the condition did not hold within {within} s")
        time.sleep(0.02)  # polling a condition that has no event to wait on, bounded by the deadline
