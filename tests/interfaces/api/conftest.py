"""Fixtures for the REST API tests: the app in process (an httpx2 ASGI client on a fresh data
home, the app's lifespan running, so its session host too; it sends the data home's API token).
The helpers they use are in :mod:`tests.support.api`; ``patchbay serve`` as a real process is
:func:`tests.support.serve.serve_process`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import Api, auth_headers


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    app = create_app(Settings(home=home), workspace=workspace)
    transport = httpx2.ASGITransport(app=app)  # runs no lifespan: entered here, in this one task
    headers = auth_headers(home)
    async with app.router.lifespan_context(app):
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765", headers=headers) as client:
            yield Api(client=client, app=app, home=home, workspace=workspace)
    app.state.context.close()
