"""The REST API in process, as the ``api`` fixture (tests/interfaces/api/conftest.py) gives it, and
what its tests read from responses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from fastapi import FastAPI

from patchbay.adapters.api_token import api_token
from patchbay.control.connectors import ConnectorService
from patchbay.runtime.sessions import SessionHost


@dataclass
class Api:
    """An in-process API: its client, the app, its data home and default workspace."""

    client: httpx2.AsyncClient
    app: FastAPI
    home: Path
    workspace: Path

    @property
    def host(self) -> SessionHost:
        """The app's session host (its lifespan is running)."""
        return self.app.state.context.session_host()

    @property
    def service(self) -> ConnectorService:
        """The connector service the app uses (to arrange state the API cannot make, e.g. a built-in)."""
        return self.app.state.context.connector_service()

    async def create(self, name: str, target: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """POST a connector; asserts 201 and returns the body."""
        response = await self.client.post("/api/mcp/connectors", json={"name": name, "target": target, **fields})
        assert response.status_code == 201, response.text
        return response.json()


def auth_headers(home: Path) -> dict[str, str]:
    """The ``Authorization`` header with the API token of data home ``home``."""
    return {"Authorization": f"Bearer {api_token(home)}"}


NO_RELOAD = {"code": None, "sessions": []}
"""The ``runtime_reload`` of a mutation while no session is open."""


def error_of(response: httpx2.Response) -> dict[str, Any]:
    """The ``error`` object of an error response (asserting the one error shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]
