"""What a connector's detail keeps of its last probe (``GET /api/mcp/connectors/{connector}``): the
redacted stderr tail of a local command, the negotiated protocol version, and the OAuth state; the
list carries none of them."""

from __future__ import annotations

import sys

import pytest

from tests.support.api import Api

pytestmark = pytest.mark.anyio

SECRET = "pb-detail-secret-4f1c9a7e2b"
LEAKY = (
    "import os, sys; sys.stderr.write('starting\\nkey=' + os.environ['LEAKY_KEY'] + '\\nfatal: no config\\n');"
    " sys.exit(4)"
)


async def test_a_failed_local_command_leaves_its_redacted_stderr_tail_on_the_detail(api: Api) -> None:
    await api.create(
        "leaky",
        {"transport": "stdio", "command": sys.executable, "args": ["-c", LEAKY]},
        bindings=[{"delivery": "env", "name": "LEAKY_KEY", "value": SECRET}],
    )
    report = (await api.client.post("/api/mcp/connectors/leaky/probe")).json()
    assert report["state"] == "error"
    response = await api.client.get("/api/mcp/connectors/leaky")
    detail = response.json()
    assert "fatal: no config" in detail["stderr_tail"] and "key=" in detail["stderr_tail"]
    assert SECRET not in response.text
    assert detail["protocol_version"] is None and detail["oauth_state"] is None
    listing = await api.client.get("/api/mcp/connectors")
    (entry,) = listing.json()["connectors"]
    assert "stderr_tail" not in entry and SECRET not in listing.text


async def test_a_ready_probe_leaves_the_negotiated_protocol_version(api: Api) -> None:
    await api.create("time", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True)
    assert (await api.client.get("/api/mcp/connectors/time")).json()["protocol_version"] is None
    report = (await api.client.post("/api/mcp/connectors/time/probe")).json()
    assert report["state"] == "ready"
    detail = (await api.client.get("/api/mcp/connectors/time")).json()
    assert detail["protocol_version"] == report["protocol_version"] and detail["protocol_version"]


async def test_an_oauth_connector_shows_its_grant_state_never_a_token(api: Api) -> None:
    from patchbay.control.oauth import OAuthService

    await api.create("docs", {"transport": "streamable_http", "url": "https://mcp.example.com/mcp"})
    assert (await api.client.get("/api/mcp/connectors/docs")).json()["oauth_state"] is None
    OAuthService(api.service).configure("docs", client_id="patchbay-tests")
    detail = (await api.client.get("/api/mcp/connectors/docs")).json()
    assert detail["oauth_state"] == "not_authorized" and detail["auth_state"] == "needs-auth"
