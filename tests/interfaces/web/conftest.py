"""Fixtures for the settings page's plain-HTTP tests: the app in process (its lifespan running)
and a client that logged in like a browser (the session cookie, no bearer token)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from patchbay.adapters.api_token import api_token
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import Api, auth_headers


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    """The app on a fresh data home; ``api.client`` sends the bearer token."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    app = create_app(Settings(home=home), workspace=workspace)
    transport = httpx2.ASGITransport(app=app)
    async with app.router.lifespan_context(app):
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://127.0.0.1:8765", headers=auth_headers(home)
        ) as client:
            yield Api(client=client, app=app, home=home, workspace=workspace)
    app.state.context.close()


@pytest.fixture
async def cookie_client(api: Api) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the same app that logged in through the login URL: it has the session cookie
    only, as a browser does."""
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        login = await client.get(f"/login?token={api_token(api.home)}")
        assert login.status_code == 303 and login.headers["location"] == "/ui"
        yield client


@pytest.fixture
async def anonymous(api: Api) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the same app that sends no credentials."""
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        yield client
