"""The REST API application: :func:`create_app` builds it, ``patchbay serve`` serves it.

Usage::

    from patchbay.interfaces.api import create_app
    app = create_app(Settings(home=tmp_path))            # an ASGI app; uvicorn or an ASGI client

Layout: contracts in :mod:`~patchbay.interfaces.api.contracts` (the one module of request and
response models), errors in :mod:`~patchbay.interfaces.api.errors`, routes by area in
:mod:`~patchbay.interfaces.api.routes` (connectors, tools and probe, import, the deprecated
compatibility projections). Routes only translate: the connector service
(:class:`~patchbay.control.connectors.ConnectorService`) validates, writes and decides.

Before any route runs: a bad ``Host`` or foreign ``Origin`` is 403 ``origin_refused``, a body over
``Settings.api_max_body_bytes`` is 413 ``payload_too_large``
(:mod:`~patchbay.interfaces.api.limits`), and a request without the API token or session cookie is
401 ``unauthorized`` (:mod:`~patchbay.interfaces.api.auth`; a cookie-authenticated request that
changes something also needs the CSRF header, else 403 ``csrf_failed``). No CORS headers are sent.

The settings page (:mod:`patchbay.interfaces.web`) is served by the same app at ``/ui``; ``/``
redirects there. The MCP gateway is served at ``/mcp``
(:mod:`~patchbay.interfaces.api.gateway_endpoint`), behind the same guards; there the gateway
token (:mod:`patchbay.control.gateway_token`) is accepted too, and from a peer that is not on
loopback it is the only token accepted. The gateway token opens nothing else.

The app's state and its session host: :class:`~patchbay.interfaces.api.context.ApiContext`.

Design: docs/security.md
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from patchbay.adapters.api_token import api_token
from patchbay.adapters.credentials import CredentialStore
from patchbay.adapters.wakeups import open_wakeups
from patchbay.control.connectors import ConnectorService
from patchbay.control.gateway_token import GatewayTokens
from patchbay.core.errors import ErrorCode
from patchbay.core.settings import Settings
from patchbay.core.version import __version__
from patchbay.interfaces.api.auth import TokenAuthMiddleware, refuse_other_scopes
from patchbay.interfaces.api.context import ApiContext, open_status_registry
from patchbay.interfaces.api.errors import error_response, install_error_handlers
from patchbay.interfaces.api.gateway_endpoint import GATEWAY_PATH, HttpGateway
from patchbay.interfaces.api.limits import BodyLimitMiddleware
from patchbay.interfaces.api.responses import RedactedJSONResponse
from patchbay.interfaces.api.routes import (
    approvals,
    compat,
    connectors,
    health,
    imports,
    oauth,
    projects,
    sessions,
    status,
    tools,
)
from patchbay.interfaces.gateway.approvals import GatewayApprovals
from patchbay.interfaces.web import oauth_callback
from patchbay.interfaces.web.pages import install_pages

__all__ = [
    "LOOPBACK_HOSTS",
    "LocalOnlyMiddleware",
    "create_app",
    "parse_authority",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Host names a loopback-bound server answers to."""


_NAME_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_AUTHORITY = re.compile(
    rf"(?:\[(?P<ip6>[0-9a-f:.]+)\]|(?P<name>{_NAME_LABEL}(?:\.{_NAME_LABEL})*\.?))(?::(?P<port>\d{{1,5}}))?"
)
_ORIGIN = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<authority>[^/?#@\s]*)")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_authority(value: str) -> tuple[str, int | None] | None:
    """``127.0.0.1:8765`` → ``("127.0.0.1", 8765)``; ``[::1]`` → ``("::1", None)``; lower-cased,
    an IPv6 address in its compressed form.

    Returns:
        None for anything else: an unclosed or trailing-text bracket (``[::1``, ``[::1]evil``), a
        bracket that holds no IPv6 address, a name with characters DNS names do not have, a port
        outside 1-65535.
    """
    match = _AUTHORITY.fullmatch(value.strip().lower())
    if match is None:
        return None
    port = None
    if match["port"] is not None:
        port = int(match["port"])
        if not 1 <= port <= 65535:
            return None
    if match["ip6"] is not None:
        try:
            return ipaddress.IPv6Address(match["ip6"]).compressed, port
        except ValueError:
            return None
    return match["name"].rstrip("."), port


def _header_values(headers: list[tuple[bytes, bytes]], name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in headers if k.lower() == name]


class LocalOnlyMiddleware:
    """Refuse requests from browsers of other origins and, on loopback, for other host names.

    Each request must carry exactly one well-formed ``Host`` (a DNS name, an IPv4 address or a
    bracketed IPv6 address, an optional port 1-65535) and at most one ``Origin``; an ``Origin``
    must name this server exactly: the request's scheme, ``Host``'s name and port (default ports
    filled in). Anything else is 403 ``origin_refused``; the refused values are quoted (cut to
    200 characters, redacted) so a user can see what was sent. A websocket is closed with 1008
    (policy violation) before it is accepted.

    Args:
        app: the ASGI app.
        allowed_hosts: host names (no port) the ``Host`` header may carry; None: any.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] | None) -> None:
        self.app = app
        self.allowed = (
            None
            if allowed_hosts is None
            else frozenset(parsed[0] for h in allowed_hosts if (parsed := parse_authority(_bracketed(h))))
        )

    def _refusal(self, scope: Scope) -> tuple[str, dict[str, str]] | None:
        # details name the header only: refused input is never echoed
        headers = list(scope.get("headers", []))
        hosts = _header_values(headers, b"host")
        if len(hosts) > 1:
            return "more than one Host header", {"header": "Host"}
        host = hosts[0] if hosts else ""
        authority = parse_authority(host)
        if authority is None and (self.allowed is not None or host):
            return "Host header names no address this server answers to", {"header": "Host"}
        if self.allowed is not None and authority is not None and authority[0] not in self.allowed:
            return "Host header names no address this server answers to", {"header": "Host"}
        origins = _header_values(headers, b"origin")
        if not origins:
            return None
        if len(origins) > 1:
            return "more than one Origin header", {"header": "Origin"}
        scheme = str(scope.get("scheme", "http"))
        if authority is None or not _same_origin(origins[0], scheme, authority):
            return "cross-origin requests are refused", {"header": "Origin"}
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # a websocket is refused here too: with --no-auth this is the only check there is
        if await refuse_other_scopes(scope, receive, send):
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            response = error_response(403, ErrorCode.ORIGIN_REFUSED, refusal[0], refusal[1])
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _same_origin(origin: str, scheme: str, authority: tuple[str, int | None]) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) is this request's own origin."""
    match = _ORIGIN.fullmatch(origin.strip().lower())
    if match is None or match["scheme"] != scheme:
        return False
    parsed = parse_authority(match["authority"])
    if parsed is None:
        return False
    default = _DEFAULT_PORTS.get(scheme)
    return (parsed[0], parsed[1] or default) == (authority[0], authority[1] or default)


def create_app(
    settings: Settings | None = None,
    *,
    service: ConnectorService | None = None,
    workspace: Path | None = None,
    allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
    token: str | None = None,
    require_token: bool = True,
    gateway_token: Callable[[str], bool] | None = None,
) -> FastAPI:
    """Build the REST API.

    Args:
        settings: default ``Settings()`` (``PATCHBAY_HOME`` ...); ignored for the store when
            ``service`` is given.
        service: a connector service to use instead of opening the store.
        workspace: default workspace for routes without ``cwd``; default the current directory.
        allowed_hosts: ``Host`` names answered (default loopback only); None for any
            (``serve --allow-remote``).
        token: the API token every request must carry (:mod:`~patchbay.interfaces.api.auth`);
            default the data home's (:func:`~patchbay.adapters.api_token.api_token`, created on
            first use).
        require_token: False serves without authentication (``serve --no-auth``, loopback only).
        gateway_token: ``check(supplied) -> bool`` for the gateway token on ``/mcp``; default
            the data home's (:meth:`~patchbay.control.gateway_token.GatewayTokens.accepts`, read
            from the credential store per request, so a rotation applies at once).

    Returns:
        A FastAPI app; ``app.state.context`` is its :class:`ApiContext`. Serve it with its
        lifespan (uvicorn does by default; in tests enter ``app.router.lifespan_context(app)``):
        the lifespan runs the session host.
    """
    settings = settings or (service.settings if service is not None else Settings())
    context = ApiContext(
        settings=settings,
        workspace=(workspace or Path.cwd()).resolve(),
        service=service,
        status=open_status_registry(settings),
        wakeups=open_wakeups(settings),
    )
    if require_token and token is None:
        token = api_token(settings.home)
    # /docs and /redoc from assets the fastapi-offline package ships, at /static-offline-docs:
    # the pages work without internet and reference no other site
    app = FastAPIOffline(
        title="Patchbay",
        version=__version__,
        summary=("Connector registry, tool grants, real probes and governed workspace sessions for MCP servers."),
        default_response_class=RedactedJSONResponse,
        lifespan=lambda _app: context.hosting(),
        swagger_ui_parameters={"validatorUrl": None},  # Swagger UI's default validator is online
    )
    app.state.context = context
    context.gateway = HttpGateway(
        settings,
        workspace=context.workspace,
        prepare=context.gateway_source,
        state_version=context.state_version,
        status=context.status,
        approvals=GatewayApprovals(
            context.approval_broker(), context.settings_page, patience=settings.gateway_approval_wait
        ),
        wakeups=context.wakeups,
    )
    install_error_handlers(app)
    # sessions first: the tool call is the hot route, and FastAPI matches a request against each
    # included router in turn (every route of every router before the one that matches); no
    # path of one router is a path of another, so the order decides nothing else
    routers = (
        sessions.router,
        connectors.router,
        tools.router,
        imports.router,
        projects.router,
        compat.router,
        health.router,
        oauth.router,
        status.router,
        approvals.router,
    )
    for router in routers:
        app.include_router(router)
    app.state.api_routes = [route for router in routers for route in router.routes]  # for 405's Allow
    install_pages(app)  # the settings page at /ui: it reads and writes through the routes above
    app.include_router(oauth_callback.router)  # where the browser lands after an OAuth authorization
    # the MCP gateway (an ASGI app: every method, the SDK's session manager answers them)
    app.router.routes.append(Route(GATEWAY_PATH, endpoint=context.gateway, include_in_schema=False))
    # the last added runs first: Host/Origin, then the body size, then the token
    if require_token:
        assert token is not None
        if gateway_token is None:
            gateway_token = GatewayTokens(CredentialStore(settings.home)).accepts
        app.add_middleware(
            TokenAuthMiddleware,
            token=token,
            session_max_age=settings.api_session_max_age,
            gateway_token=gateway_token,
        )
        _document_security(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.api_max_body_bytes)
    app.add_middleware(LocalOnlyMiddleware, allowed_hosts=allowed_hosts)
    return app


def _document_security(app: FastAPI) -> None:
    """Name the token in the OpenAPI document (the middleware enforces it, so no route declares
    it): Swagger UI then offers "Authorize", and clients know every operation needs it."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()  # FastAPI keeps it as app.openapi_schema
            document.setdefault("components", {})["securitySchemes"] = {
                "apiToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The data home's API token (`patchbay api-token`).",
                }
            }
            document["security"] = [{"apiToken": []}]
            return document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
