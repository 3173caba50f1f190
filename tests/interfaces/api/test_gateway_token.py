"""The gateway token on the app: it opens ``/mcp`` (from any peer) and nothing else; the API token
opens ``/mcp`` from loopback peers only; a wrong or rotated token is 401 ``unauthorized``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastapi import FastAPI

from patchbay.adapters.api_token import api_token
from patchbay.adapters.credentials import CredentialStore
from patchbay.control.gateway_token import GatewayTokens
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from patchbay.interfaces.api.auth import is_loopback_peer
from tests.support.api import error_of

pytestmark = pytest.mark.anyio

LOOPBACK = ("127.0.0.1", 40000)
REMOTE = ("203.0.113.7", 40000)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    app: FastAPI
    home: Path
    tokens: GatewayTokens
    client: Callable[[tuple[str, int]], httpx2.AsyncClient]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """The app of a fresh data home (no connectors), its lifespan running; ``client(peer)`` is
    an ASGI client whose requests come from address ``peer`` and carry no credentials."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    # the app's own check of the data home's gateway token, as `serve` builds it
    app = create_app(Settings(home=home), workspace=workspace, allowed_hosts=None)

    def client(peer: tuple[str, int]) -> httpx2.AsyncClient:
        transport = httpx2.ASGITransport(app=app, client=peer)
        return httpx2.AsyncClient(transport=transport, base_url="http://patchbay.example:8765", timeout=30)

    async with app.router.lifespan_context(app):
        yield Served(app, home, GatewayTokens(CredentialStore(home)), client)
    app.state.context.close()


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _assert_unauthorized(response: httpx2.Response, *, says: str, not_quoting: str) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    error = error_of(response)
    assert error["code"] == "unauthorized" and says in error["message"]
    assert not_quoting not in response.text


@asynccontextmanager
async def _initialized(client: httpx2.AsyncClient, headers: dict[str, str]) -> AsyncIterator[httpx2.Response]:
    """POST an ``initialize`` to ``/mcp?mode=direct``; the session is deleted on the way out."""
    response = await client.post("/mcp?mode=direct", json=INITIALIZE, headers={**ACCEPT, **headers})
    try:
        yield response
    finally:
        session = response.headers.get("mcp-session-id")
        if session:
            await client.delete("/mcp?mode=direct", headers={**headers, "Mcp-Session-Id": session})


async def test_the_gateway_token_opens_mcp_from_a_remote_peer_and_nothing_else(served: Served) -> None:
    issued = served.tokens.ensure()
    assert issued is not None
    headers = _bearer(issued.token)
    with anyio.fail_after(60):
        async with served.client(REMOTE) as remote:
            async with _initialized(remote, headers) as response:
                assert response.status_code == 200, response.text
                assert '"serverInfo"' in response.text and response.headers["mcp-session-id"]
            # every REST route, the page, the docs and even the health probe: refused before a route runs
            for method, path in [
                ("GET", "/api/mcp/connectors"),
                ("POST", "/api/mcp/connectors"),
                ("GET", "/api/health"),
                ("GET", "/ui"),
                ("GET", "/"),
                ("GET", "/openapi.json"),
                ("GET", "/docs"),
                ("GET", "/mcp/"),
            ]:
                body = (
                    {"name": "x", "target": {"transport": "stdio", "command": "/bin/sh"}} if method == "POST" else None
                )
                refused = await remote.request(method, path, json=body, headers=headers)
                _assert_unauthorized(refused, says="opens the MCP gateway at /mcp only", not_quoting=issued.token)
            login = await remote.get(f"/login?token={issued.token}")
            _assert_unauthorized(login, says="needs the API token", not_quoting=issued.token)
            assert "set-cookie" not in login.headers
        async with served.client(LOOPBACK) as local:  # from this machine too: /mcp only
            refused = await local.get("/api/mcp/connectors", headers=headers)
            _assert_unauthorized(refused, says="opens the MCP gateway at /mcp only", not_quoting=issued.token)
            async with _initialized(local, headers) as response:
                assert response.status_code == 200, response.text
            listed = await local.get("/api/mcp/connectors", headers=_bearer(api_token(served.home)))
            assert listed.json() == {"connectors": []}  # nothing was created by the refused POST


async def test_the_api_token_opens_mcp_from_loopback_only(served: Served) -> None:
    token = api_token(served.home)
    with anyio.fail_after(60):
        async with served.client(LOOPBACK) as local:
            async with _initialized(local, _bearer(token)) as response:
                assert response.status_code == 200, response.text
        async with served.client(REMOTE) as remote:
            async with _initialized(remote, _bearer(token)) as response:
                _assert_unauthorized(response, says="must send the gateway token", not_quoting=token)
            # the rest of the API keeps taking it from any peer (serve --allow-remote's REST API)
            assert (await remote.get("/api/mcp/connectors", headers=_bearer(token))).status_code == 200


async def test_a_wrong_token_or_a_rotated_one_is_401_on_mcp(served: Served) -> None:
    first = served.tokens.ensure()
    assert first is not None
    with anyio.fail_after(60):
        async with served.client(REMOTE) as remote:
            for wrong in ("pbgw_" + "x" * 43, first.token[:-1], first.token + "x", ""):
                async with _initialized(remote, _bearer(wrong)) as response:
                    _assert_unauthorized(response, says="needs its token", not_quoting=first.token)
            async with _initialized(remote, {"Authorization": f"Basic {first.token}"}) as response:
                _assert_unauthorized(response, says="needs its token", not_quoting=first.token)
            twice = [("Authorization", f"Bearer {first.token}")] * 2
            response = await remote.post("/mcp?mode=direct", json=INITIALIZE, headers=[*ACCEPT.items(), *twice])
            _assert_unauthorized(response, says="needs its token", not_quoting=first.token)
            # rotated by another process (its own store object): the running app refuses the old one at once
            second = GatewayTokens(CredentialStore(served.home)).rotate()
            assert second.replaced and second.token != first.token
            async with _initialized(remote, _bearer(first.token)) as response:
                _assert_unauthorized(response, says="needs its token", not_quoting=first.token)
            async with _initialized(remote, _bearer(second.token)) as response:
                assert response.status_code == 200, response.text


async def test_without_a_gateway_token_mcp_behaves_as_before_on_loopback(served: Served) -> None:
    assert served.tokens.status() is None
    with anyio.fail_after(60):
        async with served.client(LOOPBACK) as local:
            bare = await local.post("/mcp", json=INITIALIZE, headers=ACCEPT)
            _assert_unauthorized(bare, says="needs its token", not_quoting="Bearer")
            async with _initialized(local, _bearer(api_token(served.home))) as response:
                assert response.status_code == 200, response.text
    assert served.tokens.status() is None  # serving never makes one by itself


@pytest.mark.parametrize(
    ("client", "loopback"),
    [
        (("127.0.0.1", 1), True),
        (("127.8.9.10", 1), True),
        (("::1", 1), True),
        (("::ffff:127.0.0.1", 1), True),
        (("::ffff:10.0.0.1", 1), False),
        (("10.0.0.1", 1), False),
        (("testclient", 1), False),
        (None, False),
    ],
)
def test_only_loopback_addresses_are_loopback_peers(client: Any, loopback: bool) -> None:
    assert is_loopback_peer({"client": client}) is loopback
