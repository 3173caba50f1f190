"""Logins started from the settings page: a start step and a finish step around
:meth:`~patchbay.control.oauth.OAuthService.login`.

:meth:`WebLogins.start` runs the same login the CLI runs (discovery, client registration, PKCE,
the issuer pin, the probe that caches the catalog) in a task of the serve process, with its
redirect URI the REST API's callback route instead of a loopback listener
(:mod:`patchbay.adapters.oauth.relay`); it answers as soon as the authorization URL is known.
:meth:`WebLogins.finish` hands the browser's redirect to that login and waits for its end. States
live in this process's memory only: single use, ten minutes, bound to the connector and the
redirect URI. A new start for a connector cancels the login still waiting for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from patchbay.adapters.oauth import STATE_TTL, CallbackRelay, relayed
from patchbay.control.oauth import OAuthService
from patchbay.core.errors import ConfigError, ErrorCode, PatchbayError
from patchbay.core.models import ProbeResult
from patchbay.core.oauth import oauth_from_config

__all__ = ["FINISH_WAIT", "START_WAIT", "LoginStart", "WebLogins"]

START_WAIT = 60.0
"""Seconds :meth:`WebLogins.start` waits for the authorization URL (discovery, registration)."""
FINISH_WAIT = 60.0
"""Seconds :meth:`WebLogins.finish` waits for the code exchange and the probe after a redirect."""


@dataclass
class LoginStart:
    """What starting a login gave.

    ``state``: ``pending`` (open ``authorize_url``; the login waits for the redirect), ``authorized``
    (no person was needed: the stored grant worked) or ``failed`` (``code``/``message`` say why).
    """

    state: Literal["pending", "authorized", "failed"]
    authorize_url: str | None = None
    code: str | None = None
    message: str | None = None


@dataclass
class _Login:
    connector_id: str
    url: str | None = None
    shown: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: ProbeResult | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class WebLogins:
    """The logins one serve process runs for the settings page.

    Usage::

        async with WebLogins() as logins:
            start = await logins.start(oauth, "notes", redirect_uri=..., workspace=...)
            ok = await logins.finish("/api/mcp/oauth/callback", "code=...&state=...")
    """

    def __init__(self) -> None:
        self.relay = CallbackRelay()
        self._logins: dict[str, _Login] = {}
        self._tg: TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[WebLogins]:
        """Run logins until the block ends (then every login still waiting is cancelled)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def start(self, oauth: OAuthService, name: str, *, redirect_uri: str, workspace: Path) -> LoginStart:
        """Start connector ``name``'s login; answer once its authorization URL is known.

        Args:
            oauth: the OAuth service of the connector service the API uses.
            name: the connector's name.
            redirect_uri: the callback route's absolute URL as the browser reaches it.
            workspace: where the login's probe runs.

        Raises:
            NotFoundError: ``not_found``.
            ConfigError: ``invalid_config``: the connector has no OAuth settings.
            PatchbayError: ``unknown`` when no login can run (the app runs without its lifespan).
        """
        if self._tg is None:
            raise PatchbayError("no login can run (the app was started without its lifespan)", code=ErrorCode.UNKNOWN)
        connector = await anyio.to_thread.run_sync(oauth.connectors.get, name)
        if oauth_from_config(connector.runtime_config) is None:
            raise ConfigError("oauth", f"connector {name!r} has no OAuth settings")
        previous = self._logins.pop(connector.connector_id, None)
        if previous is not None:
            previous.scope.cancel()
            await previous.done.wait()
        login = _Login(connector.connector_id)
        self._logins[connector.connector_id] = login

        async def show(url: str) -> None:
            login.url = url
            login.shown.set()

        async def run() -> None:
            with login.scope:
                try:
                    with relayed(self.relay, redirect_uri):
                        login.outcome, _ = await oauth.login(
                            name, authorizer=show, workspace=workspace, login_timeout=STATE_TTL
                        )
                except PatchbayError as exc:  # ProbeError included
                    login.outcome = _failed(name, str(exc.code), exc.message)
            if login.outcome is None:
                login.outcome = _failed(name, "auth_required", "the login was cancelled")
            if self._logins.get(login.connector_id) is login and login.url is None:
                del self._logins[login.connector_id]
            login.done.set()
            login.shown.set()

        self._tg.start_soon(run)
        with anyio.move_on_after(START_WAIT):
            await login.shown.wait()
        if login.url is not None and not login.done.is_set():
            return LoginStart("pending", authorize_url=login.url)
        if not login.done.is_set():
            login.scope.cancel()
            await login.done.wait()
            return LoginStart("failed", code="timeout", message="the authorization server did not answer in time")
        result = login.outcome
        assert result is not None
        if result.state == "ready":
            return LoginStart("authorized")
        return LoginStart("failed", code=result.code, message=result.message)

    async def finish(self, path: str, query: str) -> bool:
        """Hand one browser redirect to its login and wait (at most :data:`FINISH_WAIT` seconds)
        for the code exchange and the probe.

        Args:
            path: the request's path; query: its raw query string.

        Returns:
            Whether the login ended with a grant and a working connection. An unknown, used or
            expired state, a denied consent or a failed exchange is False.
        """
        verdict, connector_id = await self.relay.deliver(path, query)
        login = self._logins.get(connector_id) if connector_id is not None else None
        if login is None:
            return False
        with anyio.move_on_after(FINISH_WAIT):
            await login.done.wait()
        if self._logins.get(login.connector_id) is login and login.done.is_set():
            del self._logins[login.connector_id]
        return verdict == "success" and login.outcome is not None and login.outcome.state == "ready"


def _failed(name: str, code: str, message: str) -> ProbeResult:
    return ProbeResult(connector=name, state="error", code=code, message=message)
