"""Deprecated compatibility projections of the old routes.

The old settings page read a catalog and toggled servers by id. These routes answer in the old
shapes from the connector service (no second store, no second writer):

* ``GET /api/mcp/catalog`` and ``GET /api/settings/mcp``: read-only projections of the connectors;
* ``PUT /api/settings/mcp/{server_id}`` with ``{"enabled": bool}``: the global settings mutation of
  ``PUT /api/mcp/connectors/{connector}/settings``, without ``revision`` and without ``cwd`` (the
  old routes no longer require ``cwd``).

Every answer carries ``Deprecation: true`` and a ``Link`` to its successor; the OpenAPI document
marks the operations ``deprecated``. Removal condition: they are deleted two releases after the one
that introduced the connector API (0.1.0), i.e. in 0.3.0.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

import patchbay.interfaces.api.contracts as c
from patchbay.interfaces.api._views import connector_summary, data_egress
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.routes._deps import ConnectorRef, Service, reload_view, resolve_connector
from patchbay.runtime.sessions import collect_reloads

__all__ = ["REMOVED_IN", "router"]

REMOVED_IN = "0.3.0"
"""The release that deletes these routes (two releases after 0.1.0)."""

router = APIRouter(tags=["deprecated"], deprecated=True)


def _deprecated(response: Response, successor: str) -> None:
    response.headers["Deprecation"] = "true"
    response.headers["Link"] = f'<{successor}>; rel="successor-version"'


_NOTE = f"Deprecated compatibility projection of the old routes; removed in {REMOVED_IN}."


@router.get(
    "/api/mcp/catalog",
    response_model=c.LegacyCatalog,
    responses=error_responses(),
    summary="Old catalog (deprecated)",
    description=f"{_NOTE} Successor: `GET /api/mcp/connectors`.",
)
def catalog(response: Response, service: Service) -> c.LegacyCatalog:
    _deprecated(response, "/api/mcp/connectors")
    servers = []
    for connector in service.list_connectors():
        summary = connector_summary(service, connector)
        entry, _ = service.queries.cached_catalog(connector)
        servers.append(
            c.LegacyCatalogServer(
                id=connector.name,
                name=connector.display_name,
                description=connector.description,
                transport=connector.transport,
                enabled=connector.settings.enabled,
                auth=summary.auth_state,
                data_egress=data_egress(connector),
                tool_count=summary.tool_count,
                tools=[t.name for t in entry.tools] if entry else [],
            )
        )
    return c.LegacyCatalog(servers=servers)


@router.get(
    "/api/settings/mcp",
    response_model=c.LegacySettings,
    responses=error_responses(),
    summary="Old MCP settings (deprecated)",
    description=f"{_NOTE} Successor: `GET /api/mcp/connectors` (`settings.enabled`).",
)
def settings(response: Response, service: Service) -> c.LegacySettings:
    _deprecated(response, "/api/mcp/connectors")
    return c.LegacySettings(
        mcp_servers=[
            c.LegacyServerSetting(server_id=x.name, enabled=x.settings.enabled) for x in service.list_connectors()
        ]
    )


@router.put(
    "/api/settings/mcp/{server_id}",
    response_model=c.LegacyToggled,
    responses=error_responses(404, 409),
    summary="Old enable/disable toggle (deprecated)",
    description=(
        f"{_NOTE} Successor: `PUT /api/mcp/connectors/{{connector}}/settings`. Turned into that global "
        "settings mutation at the current settings revision; no `cwd`. The old answer gains "
        "`runtime_reload` (how the open sessions took the change)."
    ),
)
def toggle(server_id: ConnectorRef, body: c.LegacyToggle, response: Response, service: Service) -> c.LegacyToggled:
    current = resolve_connector(service, server_id)
    _deprecated(response, f"/api/mcp/connectors/{current.name}/settings")
    with collect_reloads() as reloads:
        updated = service.update_settings(current.name, enabled=body.enabled)
    return c.LegacyToggled(
        server_id=updated.name, enabled=updated.settings.enabled, runtime_reload=reload_view(reloads.result())
    )
