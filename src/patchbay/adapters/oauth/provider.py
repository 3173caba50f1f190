"""Authorization code + PKCE S256 on the SDK's ``OAuthClientProvider``, behind Patchbay's egress
guard and token rules.

The SDK does discovery, the issuer check, client registration, PKCE, ``resource`` and scopes.
:class:`PatchbayOAuthProvider` adds: egress through
:class:`~patchbay.adapters.oauth.guarded.GuardedFlow`; grants pinned to the connector's origin and
the issuing authorization server; no login without an :data:`Authorizer` (a 401 or step-up 403
raises :class:`~patchbay.core.errors.AuthorizationRequired` /
:class:`~patchbay.core.errors.AuthorizationExpired`), and at most ``max_authorizations`` logins per
connection with one; single-flight refresh; and same-origin issuers for 2025-03-26 servers.

Single-flight refresh: within a process, one lock per credential store and connector; across
instances (given a lease store, ``PATCHBAY_REDIS_URL``), the lease ``oauth-refresh:<connector_id>``
too, taken after the lock. Whoever gets them second re-reads the stored tokens first and uses the
ones the first refreshed, so a rotated refresh token is spent once. The lease is not renewed: it
lasts :data:`REFRESH_LEASE_TTL` seconds, and a waiter gives up on it after
:data:`REFRESH_LEASE_WAIT` seconds (then it goes ahead, single flight within its process only).

Design: docs/oauth.md
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import AsyncGenerator
from urllib.parse import urlsplit

import anyio
import httpx2
from anyio.lowlevel import RunVar
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata

from patchbay.adapters.leases import Lease, Leases, wait_for
from patchbay.adapters.oauth.callback import LoopbackCallback
from patchbay.adapters.oauth.guarded import (
    AUDIT_NOTE,
    Authorizer,
    GuardedFlow,
    metadata_origins,
    oauth_error,
    trusted_origin,
)
from patchbay.adapters.oauth.storage import BundleStorage
from patchbay.core.errors import AuthorizationExpired, AuthorizationRequired, ErrorCode, ProbeError
from patchbay.core.instance import instance_id
from patchbay.core.oauth import OAuthConfig, url_origin

__all__ = [
    "AUDIT_NOTE",
    "MAX_AUTHORIZATIONS",
    "REFRESH_LEASE_TTL",
    "REFRESH_LEASE_WAIT",
    "Authorizer",
    "PatchbayOAuthProvider",
]

logger = logging.getLogger(__name__)

MAX_AUTHORIZATIONS = 3
"""Logins one connection may start (a server that keeps asking for more scope is given up on)."""

REFRESH_LEASE_TTL = 60.0
"""Seconds the cross-instance refresh lease lasts: more than a token request takes (30 s timeout)."""

REFRESH_LEASE_WAIT = 65.0
"""Seconds a refresh waits for another instance's lease before it goes ahead without it."""

_REFRESH_LOCKS: RunVar[dict[str, anyio.Lock]] = RunVar("patchbay_oauth_refresh_locks")


def _refresh_lock(key: str) -> anyio.Lock:
    try:
        locks = _REFRESH_LOCKS.get()
    except LookupError:
        locks = {}
        _REFRESH_LOCKS.set(locks)
    return locks.setdefault(key, anyio.Lock())


class PatchbayOAuthProvider(GuardedFlow, OAuthClientProvider):
    """Authorization code + PKCE S256 for one connector (the SDK's ``OAuthClientProvider``).

    Args:
        server_url: the connector's URL (the protected resource).
        config: the connector's :class:`OAuthConfig` (``grant="authorization_code"``).
        storage: the connector's :class:`BundleStorage`.
        connector: the connector's name (messages).
        authorizer: shows the authorization URL to a person; None: a login is never started
            (``auth_required``/``auth_expired`` instead).
        callback: the running :class:`LoopbackCallback` (required with an authorizer).
        client_secret: the resolved secret of a pre-registered client, if any.
        max_authorizations: logins this provider may start (default 3).
        login_timeout: seconds to wait for the browser to come back (≤ 600).
        leases: the lease store that makes a refresh single-flight across instances (Redis);
            None: within this process only. Its connection is closed after each refresh.

    Raises (from requests it authorizes, wrapped by httpx2/the SDK):
        AuthorizationRequired: ``auth_required``: no grant and no authorizer, the authorization
            server changed, or too many logins.
        AuthorizationExpired: ``auth_expired``: the grant was refused and no authorizer.
        AuthorizationFailed: ``auth_required``: the user or the server refused, or timeout.
        mcp.client.auth.OAuthFlowError / OAuthTokenError / OAuthRegistrationError: the SDK's.
    """

    def __init__(
        self,
        server_url: str,
        *,
        config: OAuthConfig,
        storage: BundleStorage,
        connector: str,
        authorizer: Authorizer | None = None,
        callback: LoopbackCallback | None = None,
        client_secret: str | None = None,
        max_authorizations: int = MAX_AUTHORIZATIONS,
        login_timeout: float = 300.0,
        leases: Leases | None = None,
    ):
        if authorizer is not None and callback is None:
            raise ValueError("an authorizer needs a running LoopbackCallback")
        redirect_uri = callback.redirect_uri if callback is not None else "http://127.0.0.1/callback"
        metadata = OAuthClientMetadata(
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            client_name="Patchbay",
            scope=config.scope,
            token_endpoint_auth_method="none" if config.client_id is None else None,
        )
        super().__init__(
            server_url,
            metadata,
            storage,
            redirect_handler=self._show if authorizer is not None else None,
            callback_handler=self._wait if authorizer is not None else None,
            client_metadata_url=config.client_metadata_url,
        )
        self.config = config
        self.storage = storage
        self.connector = connector
        self._authorizer = authorizer
        self._callback = callback
        self._client_secret = client_secret
        self._max_authorizations = max_authorizations
        self._login_timeout = login_timeout
        self.authorizations = 0
        """Logins started by this provider."""
        self._pinned: str | None = None
        self._restored = False
        self._legacy_issuer: str | None = None
        self._refresh_key = f"{storage.store.path}:{storage.connector_id}"
        self._leases = leases

    # -- loading ----------------------------------------------------------------------------

    async def _initialize(self) -> None:
        await super()._initialize()
        self.context.token_expiry_time = self.storage.expires_at
        self._pinned = await self.storage.pinned_issuer()
        if self.context.oauth_metadata is None and self._pinned is not None:
            # The token endpoint of the pinned server, so a refresh after a restart goes there
            # (the SDK alone would fall back to the resource origin's /token).
            stored = await self.storage.pinned_metadata()
            if stored is not None:
                self.context.oauth_metadata = OAuthMetadata.model_validate(stored)
                self._restored = True
        if self.config.client_id is not None:
            # A pre-registered client always wins over anything stored.
            method = self.config.token_endpoint_auth or ("client_secret_basic" if self._client_secret else "none")
            self.context.client_info = OAuthClientInformationFull(
                client_id=self.config.client_id,
                client_secret=self._client_secret,
                token_endpoint_auth_method=method,
                redirect_uris=self.context.client_metadata.redirect_uris,
                issuer=self.config.issuer or self._pinned,
            )
        elif (
            self.context.client_info is not None
            and self._callback is not None
            and self.context.client_info.client_id != self.config.client_metadata_url
            and self._callback.redirect_uri not in [str(u) for u in self.context.client_info.redirect_uris or []]
        ):
            # Registered for another loopback port: register again rather than send a redirect
            # URI the server would refuse.
            self.context.client_info = None

    def _needs_refresh(self) -> bool:
        return self._initialized and not self.context.is_token_valid() and self.context.can_refresh_token()

    # -- the interactive part ---------------------------------------------------------------

    async def _show(self, authorization_url: str) -> None:
        self.authorizations += 1
        if self.authorizations > self._max_authorizations:
            raise AuthorizationRequired(
                f"connector {self.connector!r}: gave up after {self._max_authorizations} authorizations "
                "(the server keeps asking for more)",
                details={"connector": self.connector, "reason": "too_many_authorizations"},
            )
        assert self._callback is not None and self._authorizer is not None
        self._callback.expect(authorization_url)
        await self._authorizer(authorization_url)

    async def _wait(self) -> AuthorizationCodeResult:
        assert self._callback is not None
        result = await self._callback.wait(self._login_timeout)
        if self._legacy_issuer is not None and result.iss == self._legacy_issuer:
            result.iss = str(self.context.oauth_metadata.issuer) if self.context.oauth_metadata else result.iss
        return result

    # -- the flow ---------------------------------------------------------------------------

    def _trusted_origins(self) -> set[str]:
        origins = {trusted_origin(self.context.server_url)}
        if self.context.auth_server_url:
            self._check_pin(self.context.auth_server_url)
            origins.add(trusted_origin(self.context.auth_server_url))
        if self.config.issuer:
            origins.add(trusted_origin(self.config.issuer))
        return origins | metadata_origins(self.context.oauth_metadata)

    def _check_pin(self, server: str) -> None:
        pinned = self.config.issuer or self._pinned
        if pinned is None or _same_issuer(pinned, server):
            return
        if self._authorizer is None:
            raise AuthorizationRequired(
                f"connector {self.connector!r}: its authorization server changed ({url_origin(server)}); "
                f"log in again with: patchbay auth login {self.connector}",
                details={"connector": self.connector, "reason": "issuer_changed"},
            )
        if self.config.issuer:
            raise AuthorizationRequired(
                f"connector {self.connector!r}: the server names an authorization server other than "
                "the configured issuer",
                details={"connector": self.connector, "reason": "issuer_mismatch"},
            )
        self._pinned = None  # a person is logging in again: the new server is pinned afterwards

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not self._initialized:
            async with self.context.lock:
                await self._initialize()
        refused_token: str | None = None
        for attempt in range(2):
            lock = _refresh_lock(self._refresh_key) if self._needs_refresh() or refused_token else None
            lease: Lease | None = None
            if lock is not None:
                await lock.acquire()
            try:
                if lock is not None:
                    lease = await self._refresh_lease()
                    # Another connection (or instance) may have refreshed meanwhile: use its
                    # tokens if so.
                    async with self.context.lock:
                        await self._initialize()
                    tokens = self.context.current_tokens
                    if refused_token is not None and tokens is not None and tokens.access_token == refused_token:
                        # The server refused it: refresh first (0 would read as "no expiry").
                        self.context.token_expiry_time = time.time() - 1
                retry = False
                flow = super()._auth_flow(request)
                try:
                    refreshed = False
                    outgoing = await flow.__anext__()
                    while True:
                        response = yield outgoing
                        if outgoing is not request:
                            refreshed = refreshed or outgoing.method == "POST"
                        elif response.status_code == 401 and attempt == 0 and not refreshed and self._refreshable():
                            retry = True
                            refused_token = self.context.current_tokens.access_token  # type: ignore[union-attr]
                            break
                        elif self._must_stop(response):
                            if response.status_code == 401 and (self.config.issuer or self._pinned):
                                # Nobody can log in here, but a grant from a server the resource
                                # no longer names must still be voided, not retried forever.
                                for discovery in self._resource_metadata_requests(response):
                                    metadata = await handle_protected_resource_response((yield discovery))
                                    if metadata is not None and metadata.authorization_servers:
                                        await self._void_if_moved(str(metadata.authorization_servers[0]))
                                        break
                            raise self._refusal(response)
                        outgoing = await flow.asend(response)
                except StopAsyncIteration:
                    pass
                finally:
                    await flow.aclose()
            finally:
                if lease is not None:
                    await self._release(lease)
                if lock is not None:
                    lock.release()
            if not retry:
                break
        await self._pin_after_login()

    async def _refresh_lease(self) -> Lease | None:
        """The cross-instance refresh lease of this connector (waiting for it, bounded by
        :data:`REFRESH_LEASE_WAIT`); None without a lease store or when the wait ran out."""
        if self._leases is None:
            return None
        key = f"oauth-refresh:{self.storage.connector_id}"
        owner = f"{instance_id()}/{secrets.token_hex(4)}"  # one owner per refresh
        with anyio.move_on_after(REFRESH_LEASE_WAIT):
            return await wait_for(self._leases, key, owner, REFRESH_LEASE_TTL)
        logger.warning("connector %r: another instance held its refresh lease too long; refreshing", self.connector)
        return None

    async def _release(self, lease: Lease) -> None:
        """Give the refresh lease up and close the lease store's connection (bounded, shielded)."""
        assert self._leases is not None
        with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
            await self._leases.release(lease)
            await self._leases.aclose()

    def _resource_metadata_requests(self, response: httpx2.Response) -> list[httpx2.Request]:
        """The SDK's protected-resource metadata requests for a 401 (RFC 9728 discovery order)."""
        urls = build_protected_resource_metadata_discovery_urls(
            extract_resource_metadata_from_www_auth(response), self.context.server_url
        )
        requests = []
        for url in urls:
            request = create_oauth_metadata_request(url)
            self._prepare(request)
            requests.append(request)
        return requests

    async def _void_if_moved(self, server: str) -> None:
        """Void the grant when the resource names another authorization server than the pinned one.

        Raises:
            AuthorizationRequired: ``auth_required`` (reason ``issuer_changed``) when it moved.
        """
        pinned = self.config.issuer or self._pinned
        if pinned is None or _same_issuer(pinned, server):
            return
        await self.storage.void("issuer_changed", keep_client=False)
        self.context.clear_tokens()
        raise AuthorizationRequired(
            f"connector {self.connector!r}: its authorization server changed ({url_origin(server)}); "
            f"log in again with: patchbay auth login {self.connector}",
            details={"connector": self.connector, "reason": "issuer_changed"},
        )

    def _refreshable(self) -> bool:
        tokens = self.context.current_tokens
        return tokens is not None and bool(tokens.refresh_token) and self.context.client_info is not None

    async def _inspect(
        self, request: httpx2.Request, outgoing: httpx2.Request, response: httpx2.Response
    ) -> httpx2.Response:
        return await self._legacy_metadata(outgoing, response)

    def _must_stop(self, response: httpx2.Response) -> bool:
        """A challenge the SDK would answer with a login nobody can complete here."""
        challenged = response.status_code == 401 or (
            response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"
        )
        return challenged and self._authorizer is None

    def _refusal(self, response: httpx2.Response) -> ProbeError:
        details = {"connector": self.connector, "status": response.status_code}
        if response.status_code == 403:
            return AuthorizationRequired(
                f"connector {self.connector!r} asks for more scope; grant it with: patchbay auth login {self.connector}",
                details={**details, "reason": "insufficient_scope"},
            )
        if self.context.current_tokens is not None:
            return AuthorizationExpired(
                f"connector {self.connector!r}: the server no longer accepts its token; "
                f"log in again with: patchbay auth login {self.connector}",
                details={**details, "reason": "token_rejected"},
            )
        return AuthorizationRequired(
            f"connector {self.connector!r} is not logged in; run: patchbay auth login {self.connector}",
            details={**details, "reason": "no_grant"},
        )

    async def _pin_after_login(self) -> None:
        metadata = self.context.oauth_metadata
        issuer = self._legacy_issuer or (str(metadata.issuer) if metadata is not None else self.context.auth_server_url)
        if issuer and self.context.current_tokens is not None and (issuer != self._pinned or not self._restored):
            await self.storage.pin(issuer, metadata.model_dump(mode="json", exclude_none=True) if metadata else None)
            self._pinned = issuer
            self._restored = metadata is not None

    # -- responses the SDK must see differently --------------------------------------------

    async def _legacy_metadata(self, outgoing: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """2025-03-26 layout: accept a same-origin issuer under a path (see module doc)."""
        if self.context.auth_server_url is not None or outgoing.method != "GET" or response.status_code != 200:
            return response
        origin = url_origin(self.context.server_url)
        legacy = outgoing.url.path == "/.well-known/oauth-authorization-server"
        if not legacy or trusted_origin(str(outgoing.url)) != trusted_origin(self.context.server_url):
            return response
        try:
            data = json.loads(await response.aread())
        except ValueError:
            return response
        issuer = data.get("issuer") if isinstance(data, dict) else None
        if not isinstance(issuer, str) or url_origin(issuer) != origin or urlsplit(issuer).path in ("", "/"):
            return response
        self._check_pin(issuer)
        self._legacy_issuer = issuer
        data["issuer"] = origin
        return httpx2.Response(
            200, headers={"content-type": "application/json"}, content=json.dumps(data).encode(), request=outgoing
        )

    # -- refresh ----------------------------------------------------------------------------

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response.status_code == 200:
            return await super()._handle_refresh_response(response)
        body = await response.aread()
        error = oauth_error(body)
        details = {"connector": self.connector, "status": response.status_code, "error": (error or "")[:64] or None}
        if error != "invalid_grant":
            # Only invalid_grant says the grant is gone; a 408/429/5xx, a redirect, a 404 or a
            # client-side error keeps the refresh token for a later try.
            code = (
                ErrorCode.AUTH_REQUIRED
                if error in ("invalid_client", "unauthorized_client")
                else ErrorCode.SERVER_CLOSED
            )
            raise ProbeError(
                f"connector {self.connector!r}: refreshing its token failed (HTTP {response.status_code}"
                f"{', ' + error[:64] if error else ''}); the refresh token is kept",
                code=code,
                details=details,
            )
        used = self.context.current_tokens.refresh_token if self.context.current_tokens else None
        # Void only the grant this refresh token belongs to: another process may have rotated it
        # meanwhile, and then its (fresh) tokens are used instead.
        stored = await self.storage.void_unless_rotated("invalid_grant", used)
        if stored is not None:
            self.context.current_tokens = stored
            self.context.token_expiry_time = self.storage.expires_at
            if self.context.is_token_valid():
                return True
        self.context.clear_tokens()
        if self._authorizer is None:
            raise AuthorizationExpired(
                f"connector {self.connector!r}: its refresh token was refused (invalid_grant); "
                f"log in again with: patchbay auth login {self.connector}",
                details={**details, "reason": "invalid_grant"},
            )
        return False


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")
