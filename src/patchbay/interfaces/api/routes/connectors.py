"""Connector routes: list, create, show, update, delete, global settings, disconnect.

Every route but disconnect is a plain ``def``: FastAPI runs it in a worker thread, so the blocking
store and credential-store calls of the connector service never stall the event loop. Every mutation
answers with ``runtime_reload``: how the open sessions took it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import anyio.to_thread
from fastapi import APIRouter, Response

import patchbay.interfaces.api.contracts as c
from patchbay.control.connectors import ConnectorService
from patchbay.control.credentials import BindingSpec
from patchbay.control.oauth import OAuthService
from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, ConnectorTarget
from patchbay.core.validation import validate_policy_url, validate_text
from patchbay.interfaces.api._views import connector_detail
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

if TYPE_CHECKING:
    from patchbay.control.transport_detect import TransportDetection

__all__ = ["binding_spec", "router"]

router = APIRouter(prefix="/api/mcp/connectors", tags=["connectors"])


def binding_spec(body: c.BindingRequest) -> BindingSpec:
    """A binding request as the credential service takes it.

    Raises:
        ConfigError: ``invalid_config`` (field ``env``, ``header`` or ``bearer``): no name, not
            exactly one source, a bad name or value.
    """
    name = body.name
    if name is None:
        if body.delivery != "bearer":
            raise ConfigError(body.delivery, "needs a name (the environment variable or header)")
        name = "Authorization"
    value = body.value.get_secret_value() if body.value is not None else None
    default = body.default.get_secret_value() if body.default is not None else None
    return BindingSpec(
        body.delivery,
        name,
        value=value,
        variable=body.variable,
        ref=body.ref,
        plain=body.plain,
        default=default,
        default_mode=body.default_mode,
    )


def _unset_place(delivery: str, name: str) -> str:
    return "bearer" if delivery == "bearer" else f"{delivery}:{name}"


def _options(change: c.RuntimeOptionsChange | None) -> dict[str, Any]:
    """Only the keys the request named: a key left out stays, ``null`` resets."""
    return change.model_dump(exclude_unset=True) if change is not None else {}


def _target(
    body: c.StdioTargetBody | c.HttpTargetBody | c.SocketTargetBody,
    service: ConnectorService,
    context: ApiContext,
    cwd: str | None,
) -> ConnectorTarget:
    """A target body checked by the create rules (a stdio ``cwd`` against the workspace ``cwd``).

    Raises:
        ConfigError: ``invalid_config`` naming ``command``, ``args``, ``cwd``, ``url`` or ``socket_path``.
    """
    if isinstance(body, c.StdioTargetBody):
        return service.stdio_target(
            body.command, list(body.args), cwd=body.cwd or None, workspace=workspace_or_default(context, cwd)
        )
    if isinstance(body, c.HttpTargetBody):
        return service.remote_target(body.url, body.transport)
    return service.socket_target(body.path)


def _changed(detail: c.ConnectorDetail, reload: c.RuntimeReload) -> c.ConnectorChanged:
    return c.ConnectorChanged(**dict(detail), runtime_reload=reload)


@router.get("", response_model=c.ConnectorList, responses=error_responses(), summary="List connectors")
def list_connectors(service: Service, context: Context) -> Response:
    """Every connector with its global settings and states, from canonical state and the tool
    cache only: listing never starts a command or opens a connection."""
    # the body is rendered (and redacted) as the ConnectorList it documents, entry by entry and
    # only the entries that changed since the last request: no model is validated again
    return Response(context.listing.render(service, context.status), media_type="application/json")


@router.post(
    "",
    status_code=201,
    response_model=c.ConnectorChanged,
    responses=error_responses(409, 502, 504),
    summary="Create a connector",
)
def create_connector(
    body: c.ConnectorCreate, service: Service, context: Context, cwd: Workspace = None
) -> c.ConnectorChanged:
    """Register a connector after validating its definition. A stdio ``target.cwd`` is checked
    against the workspace ``cwd`` (default: where the server was started). Credentials in
    ``bindings`` are stored apart and owned by the connector; the connector keeps references.
    Created disabled unless ``enabled`` is true.

    A URL target with transport ``auto`` is detected first, once (a Streamable HTTP ``initialize``,
    else SSE, through the egress guard with the request's ``allow_private`` and header bindings,
    within the probe timeout): the connector stores the transport found and ``transport_detection``
    says how it was chosen (``auth_required`` when the server answered 401/403). When neither
    transport answers, nothing is stored: 504 ``timeout``, else 502 with the probe code
    (``server_closed``, ``network_blocked``, ``tls_error``, ``protocol_error``, ...)."""
    options = _options(body.runtime_options)
    specs = [binding_spec(b) for b in body.bindings]
    detection: TransportDetection | None = None
    if isinstance(body.target, c.HttpAutoTargetBody):
        url = body.target.url
        detection = anyio.from_thread.run(
            functools.partial(service.detect_transport, url, name=body.name, runtime_options=options, bindings=specs)
        )
        target = service.remote_target(url, detection.transport)
    else:
        target = _target(body.target, service, context, cwd)
    with collect_reloads() as reloads:
        connector, _ = service.add(
            body.name,
            target,
            description=body.description,
            display_name=body.display_name,
            terms_url=body.terms_url,
            privacy_url=body.privacy_url,
            enabled=body.enabled,
            runtime_options=options,
            bindings=specs,
        )
    changed = _changed(
        connector_detail(service, connector, context.status.read(connector.connector_id)), reload_view(reloads.result())
    )
    if detection is not None:
        changed.transport_detection = c.TransportDetectionView(**detection.to_dict())
    return changed


@router.get(
    "/{connector}",
    response_model=c.ConnectorDetail,
    responses=error_responses(404),
    summary="Show a connector",
)
def get_connector(connector: ConnectorRef, service: Service, context: Context) -> c.ConnectorDetail:
    """Details, global settings, bindings (never values), the tool cache and the live status of
    the hosted runtimes (``runtime``)."""
    found = resolve_connector(service, connector)
    return connector_detail(service, found, context.status.read(found.connector_id))


@router.patch(
    "/{connector}",
    response_model=c.ConnectorChanged,
    responses=error_responses(404, 409),
    summary="Update a connector's configuration",
)
def update_connector(
    connector: ConnectorRef, body: c.ConnectorUpdate, service: Service, context: Context, cwd: Workspace = None
) -> c.ConnectorChanged:
    """Change display name, description, target (command, URL or socket), runtime options and
    credential bindings under the connector ``revision`` (optimistic lock). Everything is checked
    before anything is written; a stale revision is 409 ``revision_conflict`` and changes nothing. A
    new ``target`` is checked like one of create (a stdio ``cwd`` against the workspace ``cwd``,
    default where the server was started) and against the connector's options and bindings (change a
    transport kind's bindings in a separate request); it keeps the grants and settings and makes the
    tool cache stale."""
    current = resolve_connector(service, connector)
    name = current.name
    options = _options(body.runtime_options)
    specs = [binding_spec(b) for b in body.bindings]
    target = _target(body.target, service, context, cwd) if body.target is not None else None
    details: dict[str, Any] = {}
    if body.display_name is not None:
        details["display_name"] = validate_text("display_name", body.display_name, max_length=200)
    if body.description is not None:
        details["description"] = validate_text("description", body.description)
    for field in ("terms_url", "privacy_url"):
        url = getattr(body, field)
        if url is not None:
            details[field] = validate_policy_url(field, url)
    if target is not None:
        service.update_target(name, target, runtime_options=options, dry_run=True)
        if target.transport != current.transport and (specs or body.unset_bindings):
            raise ConfigError("target", "change the transport kind and the credential bindings in separate requests")
    elif options:
        service.update_runtime_options(name, dry_run=True, **options)
    if specs or body.unset_bindings:
        service.set_bindings(name, specs, unset=body.unset_bindings, dry_run=True)
    # The first write checks the revision (even when it changes nothing); the next ones chain on
    # the revision each write returned, so a client that lost the race has applied nothing.
    with collect_reloads() as reloads:
        updated = service.update_details(name, expected_revision=body.revision, **details)
        if target is not None:
            updated = service.update_target(name, target, expected_revision=updated.revision, runtime_options=options)
        elif options:
            updated = service.update_runtime_options(name, expected_revision=updated.revision, **options)
        if specs or body.unset_bindings:
            updated = service.set_bindings(name, specs, unset=body.unset_bindings, expected_revision=updated.revision)
    return _changed(
        connector_detail(service, updated, context.status.read(updated.connector_id)), reload_view(reloads.result())
    )


@router.delete(
    "/{connector}",
    response_model=c.ConnectorDeleted,
    responses=error_responses(403, 404),
    summary="Remove a custom connector",
)
def delete_connector(connector: ConnectorRef, service: Service) -> c.ConnectorDeleted:
    """Remove a custom or imported connector with its grants, tool cache (FK cascade) and the
    credentials it owns. A built-in connector is 403 ``builtin_connector``."""
    with collect_reloads() as reloads:
        removed = service.remove(resolve_connector(service, connector).name)
    return c.ConnectorDeleted(
        name=removed.name,
        connector_id=removed.connector_id,
        removed=True,
        runtime_reload=reload_view(reloads.result()),
    )


@router.put(
    "/{connector}/settings",
    response_model=c.ConnectorChanged,
    responses=error_responses(404, 409),
    summary="Set global enablement and the default tool policy",
)
def put_settings(
    connector: ConnectorRef, body: c.ConnectorSettingsUpdate, service: Service, context: Context
) -> c.ConnectorChanged:
    """Global, user-level settings: ``enabled``, ``include_tools``, ``exclude_tools`` (globs),
    ``approval_mode``, under the settings ``revision`` (independent of the connector revision). A
    stale revision is 409 and changes nothing."""
    current = resolve_connector(service, connector)
    with collect_reloads() as reloads:
        updated = service.update_settings(
            current.name,
            approval_mode=body.approval_mode,
            include_tools=body.include_tools,
            exclude_tools=body.exclude_tools,
            enabled=body.enabled,
            expected_revision=body.revision,
        )
    return _changed(
        connector_detail(service, updated, context.status.read(updated.connector_id)), reload_view(reloads.result())
    )


@router.post(
    "/{connector}/disconnect",
    response_model=c.DisconnectResult,
    responses=error_responses(404, 409),
    summary="Disconnect a connector's credentials",
)
async def disconnect(
    connector: ConnectorRef, context: Context, body: c.DisconnectRequest | None = None
) -> c.DisconnectResult:
    """Delete or revoke the connector's authentication: an OAuth grant is revoked at the server's
    revocation endpoint (RFC 7009, best effort, through the egress guard) and its tokens deleted;
    every credential binding is removed, and the credentials the connector owned that nothing binds
    any more are deleted. The connector stays registered; a runtime that starts it next gets
    ``auth_required`` if it needs credentials.

    The committed change re-projects the workspaces and rebuilds the open sessions: an idle
    session's connections to the server close at once, a busy one's when its calls end
    (``runtime_reload``)."""
    service = await anyio.to_thread.run_sync(context.connector_service)

    def check() -> Connector:
        current = resolve_connector(service, connector)
        if body is not None and body.revision is not None:
            service.repository.connectors.update(current.connector_id, body.revision)  # checks the revision only
        return current

    current = await anyio.to_thread.run_sync(check)

    def unbind() -> tuple[c.ConnectorDetail, list[c.BindingView], list[str]]:
        views = service.credentials.binding_views(current)
        places = [_unset_place(b.delivery, b.name) for b in current.bindings]
        updated = service.set_bindings(current.name, (), unset=places, expected_revision=current.revision)
        remaining = service.credentials.store.load() if views else {}
        deleted = [v["ref"] for v in views if v["owned"] and v["ref"] not in remaining]
        live = context.status.read(updated.connector_id)
        return connector_detail(service, updated, live), [c.BindingView(**v) for v in views], deleted

    with collect_reloads() as reloads:  # worker threads copy this context: their reloads count
        oauth = await OAuthService(service).logout(current.name)
        detail, unbound, deleted = await anyio.to_thread.run_sync(unbind)
    return c.DisconnectResult(
        connector=detail,
        unbound=unbound,
        deleted_credentials=deleted,
        oauth=c.OAuthLogout(revoked=oauth["revoked"], revocation=oauth["revocation"], deleted=oauth["deleted"]),
        runtime_reload=reload_view(await reloads.wait()),
    )
