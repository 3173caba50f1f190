"""The loopback redirect endpoint of an authorization-code login (RFC 8252 section 7.3).

:class:`LoopbackCallback` listens on ``127.0.0.1`` only, at ``http://127.0.0.1:<port>/callback``.
Each authorization it is told to expect (:meth:`LoopbackCallback.expect`) registers its ``state``:
single use, valid for :data:`STATE_TTL` seconds, bound to the connector and to this redirect URI.
A redirect that names an unknown, used or expired state, arrives on another path, or comes after
the connector's URL or authorization server changed (the ``verify`` hook) is refused, and the
login keeps waiting for the right one. The page shown in the browser says only whether it worked:
never the code, the state or a token. HTTP parsing is ``h11``'s.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

import anyio
import h11
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from mcp.shared.auth import AuthorizationCodeResult

from patchbay.core.errors import AuthorizationFailed

__all__ = ["STATE_TTL", "LoopbackCallback"]

STATE_TTL = 600.0
"""Seconds an authorization's ``state`` stays valid (10 minutes)."""
_MAX_REQUEST_BYTES = 16 * 1024
_READ_TIMEOUT = 10.0

_PAGE = (
    "<!doctype html><meta charset=utf-8><title>Patchbay</title>"
    "<body style='font-family:sans-serif;margin:3em'><h1>{title}</h1><p>{text}</p></body>"
)
_SUCCESS = _PAGE.format(title="Authorization complete", text="You can close this window and return to Patchbay.")
_FAILURE = _PAGE.format(title="Authorization failed", text="Return to Patchbay for details.")


@dataclass
class _Pending:
    state: str
    expires_at: float


class LoopbackCallback:
    """Receive the authorization server's redirect for one connector's login.

    Usage::

        async with LoopbackCallback(connector_id=cid) as callback:
            redirect_uri = callback.redirect_uri          # register / send this
            callback.expect(authorization_url)            # before showing the URL
            result = await callback.wait(timeout=300)     # AuthorizationCodeResult

    Args:
        connector_id: the connector the login is for (states are bound to it).
        port: the port to listen on; 0 (default) picks a free one. A busy preferred port falls
            back to a free one (the caller then re-registers if its redirect URI changed).
        verify: awaited before a redirect is accepted; raise to refuse it (e.g. the connector's
            URL or authorization server changed mid-login).
        clock: monotonic seconds (tests pass a fake).
    """

    def __init__(
        self,
        *,
        connector_id: str,
        port: int = 0,
        verify: Callable[[], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.connector_id = connector_id
        self._preferred_port = port
        self._verify = verify
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._send, self._receive = anyio.create_memory_object_stream[AuthorizationCodeResult | BaseException](8)
        self._tg: TaskGroup | None = None
        self.port = 0
        self.refused = 0
        """Redirects refused so far (unknown/used/expired state, wrong path, failed verify)."""

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def __aenter__(self) -> LoopbackCallback:
        try:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self._preferred_port)
        except OSError:
            if not self._preferred_port:
                raise
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(SocketAttribute.local_port)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(listener.serve, self._handle)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(exc_type, exc, tb)
        self._send.close()
        self._receive.close()

    def expect(self, authorization_url: str) -> None:
        """Register the ``state`` of ``authorization_url`` (single use, :data:`STATE_TTL` seconds).

        Raises:
            AuthorizationFailed: the URL carries no state, or its ``redirect_uri`` is not this
                endpoint's (the redirect would never come back here).
        """
        query = parse_qs(urlsplit(authorization_url).query)
        state = (query.get("state") or [""])[0]
        if not state:
            raise AuthorizationFailed("the authorization request carries no state", details={"error": "no_state"})
        if (query.get("redirect_uri") or [""])[0] != self.redirect_uri:
            raise AuthorizationFailed(
                "the authorization request names another redirect URI", details={"error": "redirect_uri_mismatch"}
            )
        self._pending[state] = _Pending(state, self._clock() + STATE_TTL)

    async def wait(self, within: float = STATE_TTL) -> AuthorizationCodeResult:
        """The authorization response of an expected state, once the browser comes back.

        Args:
            within: seconds to wait (capped at the state lifetime).

        Raises:
            AuthorizationFailed: the server answered with an OAuth ``error``, or nothing valid
                arrived in time (``details["error"] == "timeout"``).
        """
        within = min(within, STATE_TTL)
        with anyio.move_on_after(within):
            outcome = await self._receive.receive()
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        raise AuthorizationFailed(f"no authorization arrived within {within:g}s", details={"error": "timeout"})

    # -- the HTTP side ----------------------------------------------------------------------

    async def _handle(self, stream: SocketStream) -> None:
        async with stream:
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_REQUEST_BYTES)
            target: bytes | None = None
            method = b""
            with anyio.move_on_after(_READ_TIMEOUT):
                while target is None:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        try:
                            data = await stream.receive(4096)
                        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                            return
                        conn.receive_data(data)
                    elif isinstance(event, h11.Request):
                        target, method = event.target, event.method
                    else:
                        return
            if target is None:
                return
            ok = method == b"GET" and await self._accept(target.decode("ascii", "replace")) == "success"
            body = (_SUCCESS if ok else _FAILURE).encode()
            headers = [
                ("content-type", "text/html; charset=utf-8"),
                ("content-length", str(len(body))),
                ("cache-control", "no-store"),
                ("referrer-policy", "no-referrer"),
                ("connection", "close"),
            ]
            try:
                await stream.send(conn.send(h11.Response(status_code=200 if ok else 400, headers=headers)))
                await stream.send(conn.send(h11.Data(data=body)))
                await stream.send(conn.send(h11.EndOfMessage()))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, h11.LocalProtocolError):
                pass

    async def _accept(self, target: str) -> str:
        """Judge one redirect: ``success`` (a code was delivered), ``failure`` (the server sent an
        OAuth error: the login fails) or ``refused`` (not a redirect this login expects)."""
        parts = urlsplit(target)
        query = parse_qs(parts.query)

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        state = one("state")
        pending = self._pending.get(state) if state and parts.path == urlsplit(self.redirect_uri).path else None
        if pending is None or not secrets.compare_digest(pending.state, state or ""):
            self.refused += 1
            return "refused"
        del self._pending[pending.state]  # single use, whatever happens next
        if self._clock() > pending.expires_at:
            self.refused += 1
            return "refused"
        if self._verify is not None:
            try:
                await self._verify()
            except Exception as exc:
                self.refused += 1
                await self._send.send(exc)
                return "failure"
        error = one("error")
        if error:
            await self._send.send(
                AuthorizationFailed(
                    f"the authorization server refused the authorization ({error[:64]})",
                    details={"error": error[:64]},
                )
            )
            return "failure"
        code = one("code")
        if not code:
            self.refused += 1
            return "refused"
        await self._send.send(AuthorizationCodeResult(code=code, state=state, iss=one("iss")))
        return "success"
