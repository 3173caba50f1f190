"""A redirect endpoint served by another server: the REST API's OAuth callback route.

A login started from the settings page cannot use a loopback listener of its own: the browser
comes back to the serve process (``/api/mcp/oauth/callback``). :class:`CallbackRelay` keeps, in
this process's memory, the ``state`` of every login waiting for such a redirect; the route hands
each redirect to :meth:`CallbackRelay.deliver`, which passes it to the login's
:class:`RelayedCallback`. That callback judges it exactly as :class:`LoopbackCallback` does (single
use, :data:`~patchbay.adapters.oauth.callback.STATE_TTL` seconds, bound to the connector and the
redirect URI, the ``verify`` hook): the ``state`` is the capability, no cookie is involved.

Inside :func:`relayed` (a context variable, so the tasks a login starts see it too) a login builds
a :class:`RelayedCallback` instead of a :class:`LoopbackCallback`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from types import TracebackType
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from patchbay.adapters.oauth.callback import LoopbackCallback

__all__ = ["CallbackRelay", "RelayedCallback", "relayed", "relayed_callback"]

Verdict = Literal["success", "failure", "refused"]

_CURRENT: ContextVar[tuple[CallbackRelay, str] | None] = ContextVar("patchbay_oauth_relay", default=None)


class RelayedCallback(LoopbackCallback):
    """A :class:`LoopbackCallback` whose redirects arrive through a :class:`CallbackRelay`.

    Args:
        relay: the relay that routes redirects here by ``state``.
        redirect_uri: the callback route's absolute URL (``http://127.0.0.1:8765/api/mcp/oauth/callback``).
        connector_id / verify / clock: as for :class:`LoopbackCallback`.
    """

    def __init__(
        self,
        relay: CallbackRelay,
        *,
        redirect_uri: str,
        connector_id: str,
        verify: Callable[[], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(connector_id=connector_id, verify=verify, clock=clock)
        self._relay = relay
        self._redirect_uri = redirect_uri

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def __aenter__(self) -> RelayedCallback:
        return self  # nothing to listen on: the API's route is the listener

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._relay.forget(self)
        self._send.close()
        self._receive.close()

    def expect(self, authorization_url: str) -> None:
        """Register the ``state`` here and with the relay (see :meth:`LoopbackCallback.expect`).

        Raises:
            AuthorizationFailed: no state, or another redirect URI.
        """
        super().expect(authorization_url)
        state = (parse_qs(urlsplit(authorization_url).query).get("state") or [""])[0]
        self._relay.register(state, self)

    async def accept(self, target: str) -> Verdict:
        """Judge one redirect (``path?query`` as the route received it)."""
        verdict = await self._accept(target)
        return "success" if verdict == "success" else "failure" if verdict == "failure" else "refused"


class CallbackRelay:
    """The logins of this process waiting for a redirect, by ``state``."""

    def __init__(self) -> None:
        self._waiting: dict[str, RelayedCallback] = {}

    def register(self, state: str, callback: RelayedCallback) -> None:
        """Route redirects carrying ``state`` to ``callback``."""
        self._waiting[state] = callback

    def forget(self, callback: RelayedCallback) -> None:
        """Drop every state of ``callback`` (its login ended)."""
        for state in [s for s, c in self._waiting.items() if c is callback]:
            del self._waiting[state]

    async def deliver(self, path: str, query: str) -> tuple[Verdict, str | None]:
        """Hand one redirect to the login that expects its ``state``.

        Args:
            path: the request path (checked against the login's redirect URI).
            query: the raw query string (``code``, ``state``, ``iss`` or ``error``).

        Returns:
            ``(verdict, connector_id)``: ``success`` (a code went to the login), ``failure`` (the
            server sent an OAuth error, or the connector changed: the login fails) or ``refused``
            (no login expects this state, it was used or expired; ``connector_id`` None).
        """
        state = (parse_qs(query).get("state") or [""])[0]
        callback = self._waiting.pop(state, None) if state else None  # single use, whatever follows
        if callback is None:
            return "refused", None
        verdict = await callback.accept(f"{path}?{query}")
        return verdict, callback.connector_id if verdict != "refused" else None


@contextlib.contextmanager
def relayed(relay: CallbackRelay, redirect_uri: str) -> Iterator[None]:
    """Logins started inside this block (and the tasks they start) take their redirects
    through ``relay`` at ``redirect_uri`` instead of a loopback listener."""
    token = _CURRENT.set((relay, redirect_uri))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def relayed_callback(
    *, connector_id: str, verify: Callable[[], Awaitable[None]] | None = None
) -> RelayedCallback | None:
    """The :class:`RelayedCallback` a login inside :func:`relayed` uses; None outside one."""
    current = _CURRENT.get()
    if current is None:
        return None
    relay, redirect_uri = current
    return RelayedCallback(relay, redirect_uri=redirect_uri, connector_id=connector_id, verify=verify)
