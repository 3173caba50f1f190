"""The deprecated compatibility projections (seed 003 §8.4, §19 point 14): the old shapes, from
the connector service, marked deprecated with a successor and a removal release."""

from __future__ import annotations

import pytest

from patchbay.interfaces.api.routes.compat import REMOVED_IN
from tests.support.api import NO_RELOAD, Api, error_of

pytestmark = pytest.mark.anyio


def _deprecated(response, successor: str) -> None:
    assert response.headers["deprecation"] == "true"
    assert response.headers["link"] == f'<{successor}>; rel="successor-version"'


async def test_the_old_catalog_and_settings_are_projections_of_the_connectors(api: Api) -> None:
    await api.create("time", {"transport": "stdio", "command": "mcp-server-time"}, display_name="Time", enabled=True)
    await api.create(
        "remote",
        {"transport": "streamable_http", "url": "https://mcp.example.com/mcp"},
        bindings=[{"delivery": "bearer", "variable": "PB_COMPAT_UNSET_VARIABLE"}],
    )
    await api.client.post("/api/mcp/connectors/time/probe")

    catalog = await api.client.get("/api/mcp/catalog")
    _deprecated(catalog, "/api/mcp/connectors")
    servers = {s["id"]: s for s in catalog.json()["servers"]}
    assert servers["time"] == {
        "id": "time",
        "name": "Time",
        "description": "",
        "transport": "stdio",
        "enabled": True,
        "auth": "not-required",
        "data_egress": "local command: runtime call audit unavailable",
        "tool_count": 2,
        "tools": ["get_current_time", "convert_time"],
    }
    assert servers["remote"]["auth"] == "needs-auth" and servers["remote"]["enabled"] is False

    settings = await api.client.get("/api/settings/mcp")
    _deprecated(settings, "/api/mcp/connectors")
    assert settings.json() == {
        "mcp_servers": [{"server_id": "remote", "enabled": False}, {"server_id": "time", "enabled": True}]
    }


async def test_the_old_toggle_is_the_global_settings_mutation_without_revision_or_cwd(api: Api) -> None:
    await api.create("time", {"transport": "stdio", "command": "mcp-server-time"})
    toggled = await api.client.put("/api/settings/mcp/time", json={"enabled": True})
    assert toggled.status_code == 200 and toggled.json() == {
        "server_id": "time",
        "enabled": True,
        "runtime_reload": NO_RELOAD,
    }
    _deprecated(toggled, "/api/mcp/connectors/time/settings")
    now = (await api.client.get("/api/mcp/connectors/time")).json()["settings"]
    assert now["enabled"] is True and now["revision"] == 2  # one settings mutation, through the service
    assert (await api.client.put("/api/settings/mcp/nobody", json={"enabled": True})).status_code == 404
    bad = await api.client.put("/api/settings/mcp/time", json={"enabled": "yes"})
    assert bad.status_code == 422 and error_of(bad)["code"] == "validation_error"


async def test_the_document_states_the_deprecation_and_its_removal(api: Api) -> None:
    paths = (await api.client.get("/openapi.json")).json()["paths"]
    for path, method in (
        ("/api/mcp/catalog", "get"),
        ("/api/settings/mcp", "get"),
        ("/api/settings/mcp/{server_id}", "put"),
    ):
        operation = paths[path][method]
        assert operation["deprecated"] is True
        assert f"removed in {REMOVED_IN}" in operation["description"] and "Successor" in operation["description"]
