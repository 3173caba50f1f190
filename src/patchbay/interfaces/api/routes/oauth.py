"""OAuth routes: a connector's settings, its grant's status, logging out, and the settings page's
login (start, then the authorization server's redirect back to ``/api/mcp/oauth/callback``).

The login is :class:`~patchbay.control.oauth_logins.WebLogins` on the app's lifespan: the same
login ``patchbay auth login`` runs, with this server's callback route as its redirect URI. The
callback is the one API path reached without the token or the session cookie (the browser
arrives from the authorization server; a ``SameSite=Strict`` cookie is not sent then): its
``state`` is the capability, single use, ten minutes, bound to the connector and the redirect URI.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

import patchbay.interfaces.api.contracts as c
from patchbay.control.oauth import OAuthService
from patchbay.control.oauth_logins import WebLogins
from patchbay.core.errors import ErrorCode, PatchbayError
from patchbay.core.redaction import redact_text
from patchbay.interfaces.api.auth import OAUTH_CALLBACK_PATH
from patchbay.interfaces.api.context import ApiContext
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.routes._deps import (
    ConnectorRef,
    Context,
    Service,
    Workspace,
    reload_view,
    resolve_connector,
    workspace_or_default,
)
from patchbay.runtime.sessions import collect_reloads

__all__ = ["router", "web_logins"]


router = APIRouter(prefix="/api/mcp/connectors", tags=["oauth"])

_SECRETS = ("client_secret", "private_key", "idp_client_secret", "id_token")


def web_logins(context: ApiContext) -> WebLogins:
    """The app's running logins.

    Raises:
        PatchbayError: ``unknown`` (500) when the app runs without its lifespan.
    """
    if context.logins is None:
        raise PatchbayError("no login can run (the app was started without its lifespan)", code=ErrorCode.UNKNOWN)
    return context.logins


@router.put(
    "/{connector}/oauth/config",
    response_model=c.OAuthConfigured,
    responses=error_responses(404, 409),
    summary="Set a connector's OAuth settings",
)
def put_oauth_config(connector: ConnectorRef, body: c.OAuthConfigRequest, service: Service) -> c.OAuthConfigured:
    """Replace a remote connector's OAuth settings (``patchbay auth configure``). A secret given
    as a value is stored as a credential the connector owns and never shown again; the answer is
    metadata only. Everything is checked before anything is stored (422 ``validation_error`` naming the
    setting); a stale ``revision`` is 409 ``revision_conflict``."""
    current = resolve_connector(service, connector)
    if body.revision is not None:
        service.repository.connectors.update(current.connector_id, body.revision)  # checks the revision only
    fields: dict[str, Any] = body.model_dump(exclude={"grant", "revision", *_SECRETS}, exclude_none=True)
    for name in _SECRETS:
        secret = getattr(body, name)
        if secret is not None:
            fields[name] = secret.get_secret_value()
    oauth = OAuthService(service)
    with collect_reloads() as reloads:
        updated = oauth.configure(current.name, grant=body.grant, **fields)
    return c.OAuthConfigured(
        revision=updated.revision,
        status=c.OAuthStatusView(**oauth.status(updated.name)),
        runtime_reload=reload_view(reloads.result()),
    )


@router.get(
    "/{connector}/oauth/status",
    response_model=c.OAuthStatusView,
    responses=error_responses(404),
    summary="Show a connector's OAuth grant",
)
def get_oauth_status(connector: ConnectorRef, service: Service) -> c.OAuthStatusView:
    """The grant's state, issuer, scope, expiry and whether a refresh token is held; never a token."""
    current = resolve_connector(service, connector)
    return c.OAuthStatusView(**OAuthService(service).status(current.name))


@router.post(
    "/{connector}/oauth/start",
    response_model=c.OAuthLoginStart,
    responses=error_responses(404),
    summary="Start an OAuth login from the page",
)
async def start_oauth_login(
    connector: ConnectorRef, request: Request, context: Context, cwd: Workspace = None
) -> JSONResponse:
    """Discovery, client registration (when no client is configured) and PKCE; answers with the
    ``authorize_url`` to open in a browser. The authorization server sends the browser back to
    this server's ``/api/mcp/oauth/callback``, which exchanges the code, pins the issuer and probes
    the connector (its catalog is cached). A connector with no OAuth settings is 422
    ``validation_error``; a new start cancels the connector's login still waiting."""
    logins = web_logins(context)
    service = await anyio.to_thread.run_sync(context.connector_service)
    current = await anyio.to_thread.run_sync(resolve_connector, service, connector)
    redirect_uri = str(request.base_url).rstrip("/") + OAUTH_CALLBACK_PATH
    start = await logins.start(
        OAuthService(service), current.name, redirect_uri=redirect_uri, workspace=workspace_or_default(context, cwd)
    )
    body = c.OAuthLoginStart(
        state=start.state,
        authorize_url=start.authorize_url,
        code=start.code,
        message=redact_text(start.message) if start.message is not None else None,
    )
    # The one answer not run through the redacting renderer: the browser needs the URL's
    # ``state`` as it is (the redaction rules mask any ``state=`` query parameter).
    return JSONResponse(body.model_dump(mode="json"))


@router.delete(
    "/{connector}/oauth",
    response_model=c.OAuthLoggedOut,
    responses=error_responses(404),
    summary="Log out of a connector's OAuth grant",
)
async def delete_oauth(connector: ConnectorRef, context: Context) -> c.OAuthLoggedOut:
    """Revoke the grant (RFC 7009, best effort) and delete its tokens; the settings and the
    credential bindings stay (``POST .../disconnect`` removes those too)."""
    service = await anyio.to_thread.run_sync(context.connector_service)
    current = await anyio.to_thread.run_sync(resolve_connector, service, connector)
    with collect_reloads() as reloads:
        outcome = await OAuthService(service).logout(current.name)
    return c.OAuthLoggedOut(
        revoked=outcome["revoked"],
        revocation=outcome["revocation"],
        deleted=outcome["deleted"],
        runtime_reload=reload_view(await reloads.wait()),
    )
