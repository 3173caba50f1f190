"""Build the OAuth provider of one connector connection.

:func:`connector_auth` resolves the config's secret references, picks the SDK provider for the
grant (see :mod:`patchbay.adapters.oauth.provider`) and, for an interactive login, runs the
loopback callback for as long as the connection lives.

The machine grants need the authorization server's issuer up front (the SDK sends client secrets
and assertions only to it). It is the configured ``issuer``, else the one pinned by an earlier
grant, else it is discovered once from the resource's protected-resource metadata (RFC 9728)
through the egress guard and pinned with the first token: trust on first use, and a later change
of server voids the grant.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.auth.extensions.client_credentials import SignedJWTParameters
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    handle_protected_resource_response,
)

from patchbay.adapters.credentials import CredentialStore
from patchbay.adapters.leases import Leases
from patchbay.adapters.oauth.callback import LoopbackCallback
from patchbay.adapters.oauth.guarded import (
    AUDIT_NOTE,
    Authorizer,
    GuardedAssertionProvider,
    GuardedClientCredentials,
    GuardedPrivateKeyJWT,
)
from patchbay.adapters.oauth.provider import PatchbayOAuthProvider
from patchbay.adapters.oauth.relay import relayed_callback
from patchbay.adapters.oauth.storage import BundleStorage
from patchbay.adapters.transports.egress import EgressGuard, EgressPolicy, guarded_client
from patchbay.core.errors import AuthorizationRequired, ErrorCode, ProbeError
from patchbay.core.models import ConnectorTarget, HttpTarget
from patchbay.core.oauth import OAuthConfig, oauth_from_config, url_origin

__all__ = ["connector_auth", "discover_issuer", "exchange_id_token", "oauth_for"]

_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


async def discover_issuer(server_url: str, egress: EgressPolicy) -> str | None:
    """The first authorization server the resource's protected-resource metadata names (RFC 9728),
    or None when it publishes none. Requests go through a guard opened for the resource's origin
    only and are audited as ``mcp_oauth_discovery``.

    Raises:
        EgressBlocked: ``network_blocked``; httpx2 transport errors on network failure.
    """
    guard = EgressGuard(egress, origins=[server_url])
    async with guarded_client(guard, timeout=httpx2.Timeout(30.0)) as client:
        for url in build_protected_resource_metadata_discovery_urls(None, server_url):
            request = create_oauth_metadata_request(url)
            request.extensions[AUDIT_NOTE] = "mcp_oauth_discovery"
            response = await client.send(request)
            metadata = await handle_protected_resource_response(response)
            if metadata is not None and metadata.authorization_servers:
                return str(metadata.authorization_servers[0])
    return None


async def exchange_id_token(
    *,
    idp_token_endpoint: str,
    idp_client_id: str,
    idp_client_secret: str | None,
    id_token: str,
    audience: str,
    resource: str,
    scope: str | None,
    egress: EgressPolicy,
) -> str:
    """RFC 8693 token exchange at the identity provider: the user's ID token for an ID-JAG
    (SEP-990). The request goes through a guard opened for the IdP's origin only.

    Raises:
        ProbeError: ``auth_required`` when the IdP refuses (its OAuth ``error`` in details).
    """
    data = {
        "grant_type": _TOKEN_EXCHANGE,
        "requested_token_type": _ID_JAG,
        "subject_token": id_token,
        "subject_token_type": _ID_TOKEN,
        "audience": audience,
        "resource": resource,
        "client_id": idp_client_id,
    }
    if scope:
        data["scope"] = scope
    auth = httpx2.BasicAuth(idp_client_id, idp_client_secret) if idp_client_secret else None
    guard = EgressGuard(egress, origins=[idp_token_endpoint])
    async with guarded_client(guard, timeout=httpx2.Timeout(30.0)) as client:
        request = client.build_request("POST", idp_token_endpoint, data=data)
        request.extensions[AUDIT_NOTE] = "mcp_oauth_token"
        response = await client.send(request, auth=auth) if auth is not None else await client.send(request)
    try:
        body = response.json()
    except ValueError:
        body = {}
    token = body.get("access_token") if isinstance(body, dict) else None
    if response.status_code != 200 or not isinstance(token, str) or not token:
        error = body.get("error") if isinstance(body, dict) else None
        raise ProbeError(
            f"the identity provider refused the token exchange (HTTP {response.status_code}"
            f"{', ' + str(error)[:64] if error else ''})",
            code=ErrorCode.AUTH_REQUIRED,
            details={"error": str(error)[:64] if error else None, "status": response.status_code},
        )
    return token


def _stored_port(storage: BundleStorage) -> int:
    bundle = storage.read()
    info = bundle.client_info if bundle is not None and bundle.resource_origin == storage.origin else None
    for uri in (info or {}).get("redirect_uris") or []:
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    return 0


@asynccontextmanager
async def connector_auth(
    server_url: str,
    *,
    config: OAuthConfig,
    store: CredentialStore,
    connector_id: str,
    connector: str,
    egress: EgressPolicy,
    authorizer: Authorizer | None = None,
    verify: Callable[[], Awaitable[None]] | None = None,
    login_timeout: float = 300.0,
    leases: Leases | None = None,
) -> AsyncIterator[httpx2.Auth]:
    """The ``httpx2.Auth`` for one connection of ``connector`` (its provider, bound to the
    connection's guard by the HTTP transport).

    Args:
        server_url: the connector's URL.
        config: its :class:`OAuthConfig`.
        store: the credential store holding its secrets and token bundle.
        egress: its egress policy (discovery and the IdP exchange run under it too).
        authorizer: shows an authorization URL to a person; None: never start a login.
        verify: awaited when the browser comes back; raise to refuse the callback (the
            connector's URL or authorization server changed mid-login).
        login_timeout: seconds a login waits for the browser (≤ 600).
        leases: makes an authorization-code grant's refresh single-flight across instances
            (see :class:`~patchbay.adapters.oauth.provider.PatchbayOAuthProvider`); None: within
            this process only.

    Raises:
        CredentialUnavailable: ``auth_required``: a secret reference cannot be resolved.
        AuthorizationRequired: ``auth_required``: a machine grant whose authorization server
            cannot be found.
    """
    refs = config.refs()
    values: dict[str, str] = {}
    if refs:
        resolve = functools.partial(store.resolve_values, refs, connector_id=connector_id, connector=connector)
        values = await anyio.to_thread.run_sync(resolve)
    storage = BundleStorage(store, connector_id=connector_id, resource_url=server_url, grant=config.grant)
    secret = values.get(config.client_secret_ref) if config.client_secret_ref else None

    if config.grant == "authorization_code":
        if authorizer is None:
            yield PatchbayOAuthProvider(
                server_url, config=config, storage=storage, connector=connector, client_secret=secret, leases=leases
            )
            return
        callback: LoopbackCallback | None = relayed_callback(connector_id=connector_id, verify=verify)
        if callback is None:  # the CLI's login: a loopback listener, on the port registered before
            port = await anyio.to_thread.run_sync(_stored_port, storage)
            callback = LoopbackCallback(connector_id=connector_id, port=port, verify=verify)
        async with callback:
            yield PatchbayOAuthProvider(
                server_url,
                config=config,
                storage=storage,
                connector=connector,
                authorizer=authorizer,
                callback=callback,
                client_secret=secret,
                login_timeout=login_timeout,
                leases=leases,
            )
        return

    issuer = config.issuer or await storage.pinned_issuer() or await discover_issuer(server_url, egress)
    if issuer is None:
        raise AuthorizationRequired(
            f"connector {connector!r}: no authorization server found; set one with: "
            f"patchbay auth configure {connector} --issuer URL",
            details={"connector": connector, "reason": "no_authorization_server"},
        )
    await storage.pin(issuer)
    assert config.client_id is not None
    if config.grant == "client_credentials":
        provider: httpx2.Auth = GuardedClientCredentials(
            server_url,
            storage,
            config.client_id,
            secret or "",
            token_endpoint_auth_method=config.token_endpoint_auth or "client_secret_basic",  # type: ignore[arg-type]
            scope=config.scope,
            issuer=issuer,
        )
    elif config.grant == "private_key_jwt":
        key = values[config.private_key_ref] if config.private_key_ref else ""
        assertion = SignedJWTParameters(
            issuer=config.client_id,
            subject=config.client_id,
            signing_key=key,
            signing_algorithm=config.signing_algorithm,
        ).create_assertion_provider()
        provider = GuardedPrivateKeyJWT(
            server_url,
            storage,
            config.client_id,
            assertion_provider=assertion,
            scope=config.scope,
            issuer=issuer,
        )
    else:
        assert config.idp_token_endpoint is not None and config.idp_client_id is not None
        id_token = values[config.id_token_ref] if config.id_token_ref else ""
        idp_secret = values.get(config.idp_client_secret_ref) if config.idp_client_secret_ref else None

        async def fetch_id_jag(audience: str, resource: str) -> str:
            return await exchange_id_token(
                idp_token_endpoint=config.idp_token_endpoint,  # type: ignore[arg-type]
                idp_client_id=config.idp_client_id,  # type: ignore[arg-type]
                idp_client_secret=idp_secret,
                id_token=id_token,
                audience=audience,
                resource=resource,
                scope=config.scope,
                egress=egress,
            )

        provider = GuardedAssertionProvider(
            server_url,
            storage,
            config.client_id,
            secret or "",
            issuer,
            fetch_id_jag,
            scope=config.scope,
            token_endpoint_auth_method=config.token_endpoint_auth
            if config.token_endpoint_auth in ("client_secret_basic", "client_secret_post")
            else "client_secret_basic",
            idp_origin=url_origin(config.idp_token_endpoint),
        )
    provider.connector = connector  # type: ignore[attr-defined]
    yield provider


@asynccontextmanager
async def oauth_for(
    *,
    target: ConnectorTarget,
    runtime_config: Mapping[str, Any],
    credentials: object,
    connector_id: str,
    connector: str,
    egress: EgressPolicy,
    authorizer: Authorizer | None = None,
    verify: Callable[[], Awaitable[None]] | None = None,
    login_timeout: float = 300.0,
    leases: Leases | None = None,
) -> AsyncIterator[httpx2.Auth | None]:
    """:func:`connector_auth` for a connector as a probe or a runtime holds it: None when it has
    no OAuth settings or is not an HTTP/SSE connector.

    Args:
        target / runtime_config: the connector's (``runtime_config["oauth"]``).
        credentials: what resolves its credentials; OAuth needs the :class:`CredentialStore`
            itself (its token bundle lives there).
        leases: see :func:`connector_auth`.

    Raises:
        ConfigError: ``invalid_config`` for malformed OAuth settings.
        AuthorizationRequired: ``auth_required``: no credential store, no authorization server.
        CredentialUnavailable: ``auth_required``: a secret reference cannot be resolved.
    """
    config = oauth_from_config(runtime_config)
    if config is None or not isinstance(target, HttpTarget):
        yield None
        return
    if not isinstance(credentials, CredentialStore):
        raise AuthorizationRequired(
            f"connector {connector!r} uses OAuth but there is no credential store to hold its tokens",
            details={"connector": connector, "reason": "no_credential_store"},
        )
    async with connector_auth(
        target.url,
        config=config,
        store=credentials,
        connector_id=connector_id,
        connector=connector,
        egress=egress,
        authorizer=authorizer,
        verify=verify,
        login_timeout=login_timeout,
        leases=leases,
    ) as auth:
        yield auth
