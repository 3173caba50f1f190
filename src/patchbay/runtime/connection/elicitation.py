"""Which call a server's ``elicitation/create`` is made for, and who answers it.

A server asks its user for input (``elicitation/create``, form or URL mode) while it runs a
``tools/call``. The runtime's :data:`ElicitationHandler` (``Runtime(elicitation_handler=...)``)
answers every such request unless the call it is made for carries a relay of its own: a gateway
runs each host's ``tools/call`` inside :func:`relaying_elicitation` so that the request reaches
that host (:mod:`patchbay.interfaces.gateway.elicitation`).

Finding the call: a request that arrives inside the call's own task (a 2026-07-28 server's
``InputRequiredResult``, which the SDK client resolves in the caller's task) names its relay
through the context; a 2025-era server's request arrives on the connection's receive loop,
which says nothing about which request it belongs to (stdio carries no such link), so it is
relayed only when exactly one request is in flight on the connection (a ``tools/call`` with a
relay): with several, it is answered by the runtime's handler (a gateway's declines), never
guessed into another host's hands. :func:`detach_relay` keeps a connection's own tasks from inheriting the relay of the call
that happened to start them.

While a relayed request waits for its person, the call's ``request_timeout`` clock is held (the
``max_call_seconds`` cap still applies); it starts again from the answer. A call that ends while
its relay still waits (the host cancelled it, it timed out) cancels the relay.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field

import anyio
from mcp import types

__all__ = ["CallRelays", "ElicitationHandler", "detach_relay", "relaying_elicitation"]

logger = logging.getLogger(__name__)

ElicitationHandler = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
"""``await handler(params)`` → the user's answer (``action`` accept/decline/cancel, ``content``)."""

_RELAY: ContextVar[ElicitationHandler | None] = ContextVar("patchbay_elicitation_relay", default=None)


@contextmanager
def relaying_elicitation(relay: ElicitationHandler) -> Iterator[None]:
    """Within the block, an ``elicitation/create`` that a server makes for a ``tools/call``
    made from this context is answered by ``relay`` (module docstring: how the call is found).
    A relay that raises is logged (its exception type only) and the server gets ``cancel``."""
    token = _RELAY.set(relay)
    try:
        yield
    finally:
        _RELAY.reset(token)


def detach_relay() -> None:
    """Forget, in the current task's context, the relay of the call that spawned it (a
    connection's owner task: its receive loop must not answer every later request with it)."""
    _RELAY.set(None)


@dataclass(eq=False)
class _Call:
    relay: ElicitationHandler | None
    hold: Callable[[], AbstractContextManager[None]]
    asking: set[anyio.CancelScope] = field(default_factory=set)  # its relays under way


class CallRelays:
    """The requests in flight on one connection and the relays of its ``tools/call`` requests."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []

    @contextmanager
    def track(self, hold: Callable[[], AbstractContextManager[None]] | None) -> Iterator[None]:
        """Count a request as in flight for the block: a ``tools/call`` (``hold`` given: entered
        while a person answers for it, the call's timeout clock stops) with the relay of the
        current context, if any; any other request (``hold`` None) relays nothing, but while it
        runs a 2025-era elicitation cannot be told apart from one made for it."""
        call = _Call(None, nullcontext) if hold is None else _Call(_RELAY.get(), hold)
        self._calls.append(call)
        try:
            yield
        finally:
            self._calls.remove(call)
            for scope in call.asking:  # the call is over: nobody waits for those answers
                scope.cancel()

    def _call_for(self) -> _Call | None:
        """The in-flight call whose relay answers a request arriving now (None: none does)."""
        named = _RELAY.get()
        if named is not None:
            for call in self._calls:
                if call.relay is named:
                    return call
        if len(self._calls) == 1 and self._calls[0].relay is not None:
            return self._calls[0]
        return None

    async def answer(self, params: types.ElicitRequestParams, fallback: ElicitationHandler) -> types.ElicitResult:
        """Answer a server's ``elicitation/create``: by the relay of the call it is made for,
        else by ``fallback`` (the runtime's handler). A relay that raises answers ``cancel``; one
        still waiting when its call ends (cancelled, failed) is cancelled and answers ``cancel``."""
        call = self._call_for()
        if call is None or call.relay is None:
            return await fallback(params)
        with call.hold(), anyio.CancelScope() as scope:
            call.asking.add(scope)
            try:
                return await call.relay(params)
            except Exception as exc:  # the host's side failing must not fail the server's call
                logger.warning("an elicitation could not be relayed (%s); answered cancel", type(exc).__name__)
                return types.ElicitResult(action="cancel")
            finally:
                call.asking.discard(scope)
        return types.ElicitResult(action="cancel")  # the call ended first
