"""The SDK's OAuth providers behind Patchbay's egress guard: the shared request wrapper and the
machine-to-machine grants.

:class:`GuardedFlow` wraps any SDK provider's ``_auth_flow`` request by request: an OAuth request
is tagged for the egress audit (``mcp_oauth_discovery`` for metadata GETs, ``mcp_oauth_token`` for
registration, token, refresh and revocation POSTs) and the connection's :class:`EgressGuard` is
opened for its origin only when the provider trusts that origin (:meth:`GuardedFlow._trusted_origins`):
the resource, the authorization server the metadata names (or the configured/pinned one) and the
endpoints of its issuer-checked metadata -- nothing else. The machine grants
(``client_credentials``, ``private_key_jwt``, SEP-990 ``cross_app_access``) are the SDK's providers
with that wrapper; the authorization-code provider is in :mod:`patchbay.adapters.oauth.provider`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx2
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider, PrivateKeyJWTOAuthProvider
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

from patchbay.adapters.transports.egress import EgressGuard, origin_of
from patchbay.core.errors import ProbeError

__all__ = [
    "AUDIT_NOTE",
    "Authorizer",
    "GuardedAssertionProvider",
    "GuardedClientCredentials",
    "GuardedFlow",
    "GuardedPrivateKeyJWT",
    "metadata_origins",
    "oauth_error",
    "trusted_origin",
]

Authorizer = Callable[[str], Awaitable[None]]
"""``await authorizer(authorization_url)``: get a person's browser to that URL (open it, print it,
or -- in a headless test -- fetch it). The loopback callback receives the result."""

AUDIT_NOTE = "patchbay.egress_note"
"""``request.extensions`` key naming an OAuth request's egress-audit note."""


def oauth_error(body: bytes) -> str | None:
    """The OAuth ``error`` code of a token endpoint's JSON answer, if any."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, str) else None


class GuardedFlow:
    """Mixin over an SDK provider's ``_auth_flow``: egress permits and audit tags (see module doc).

    Subclasses list the origins their OAuth requests may reach in :meth:`_trusted_origins`.
    """

    _guard: EgressGuard | None = None
    connector: str = ""

    def bind_guard(self, guard: EgressGuard) -> None:
        """Attach the connection's guard (done by the HTTP transport when it opens)."""
        self._guard = guard

    def _trusted_origins(self) -> set[str]:
        return set()

    def _prepare(self, outgoing: httpx2.Request) -> None:
        """Tag an OAuth request for the audit and open the guard for its origin when trusted."""
        outgoing.extensions[AUDIT_NOTE] = "mcp_oauth_discovery" if outgoing.method == "GET" else "mcp_oauth_token"
        if self._guard is None:
            return
        try:
            origin = origin_of(outgoing.url)
        except ProbeError:
            return  # the guard refuses it when it is sent
        if origin not in self._guard.origins and origin in self._trusted_origins():
            self._guard.permit(str(outgoing.url))

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)  # type: ignore[misc]
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    self._prepare(outgoing)
                response = yield outgoing
                response = await self._inspect(request, outgoing, response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _inspect(
        self, request: httpx2.Request, outgoing: httpx2.Request, response: httpx2.Response
    ) -> httpx2.Response:
        """Look at (and possibly replace) a response before the SDK's flow sees it."""
        return response


def trusted_origin(url: str) -> str:
    """The origin as the egress guard writes it (``scheme://host:port``, the port always given), so
    trusted origins compare equal to the guard's; ``""`` for a URL the guard refuses anyway."""
    try:
        return origin_of(url)
    except ProbeError:
        return ""


def metadata_origins(metadata: Any) -> set[str]:
    """Origins of the token, registration and revocation endpoints of issuer-checked metadata."""
    origins = set()
    for name in ("token_endpoint", "registration_endpoint", "revocation_endpoint"):
        value = getattr(metadata, name, None) if metadata is not None else None
        if value:
            origins.add(trusted_origin(str(value)))
    return origins


class _MachineFlow(GuardedFlow):
    """Shared part of the machine-to-machine providers: the configured issuer is trusted."""

    _issuer: str | None

    def _trusted_origins(self) -> set[str]:
        origins = {trusted_origin(self.context.server_url)}  # type: ignore[attr-defined]
        if self._issuer:
            origins.add(trusted_origin(self._issuer))
        return origins | metadata_origins(self.context.oauth_metadata)  # type: ignore[attr-defined]

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        expiry = getattr(self.context.storage, "expires_at", None)  # type: ignore[attr-defined]
        self.context.token_expiry_time = expiry  # type: ignore[attr-defined]


class GuardedClientCredentials(_MachineFlow, ClientCredentialsOAuthProvider):
    """The SDK's client-credentials provider behind the guard (``grant="client_credentials"``)."""


class GuardedPrivateKeyJWT(_MachineFlow, PrivateKeyJWTOAuthProvider):
    """The SDK's ``private_key_jwt`` client-credentials provider behind the guard."""


class GuardedAssertionProvider(GuardedFlow, IdentityAssertionOAuthProvider):
    """The SDK's SEP-990 identity-assertion provider behind the guard (``cross_app_access``).

    Args (beyond the SDK's): ``idp_origin``: the identity provider's token endpoint origin, whose
    RFC 8693 exchange runs inside the assertion provider on the same guarded client.
    """

    def __init__(self, *args: Any, idp_origin: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._idp_origin = idp_origin

    def _trusted_origins(self) -> set[str]:
        origins = {trusted_origin(self._issuer)}
        if self._token_endpoint:
            origins.add(trusted_origin(self._token_endpoint))
        return origins
