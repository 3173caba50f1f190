"""Fixtures for the REST API tests: the app in process (an httpx2 ASGI client on a fresh data
home, the app's lifespan running, so its session host too; it sends the data home's API token),
and ``patchbay serve`` as a real process on an ephemeral loopback port (``Served.headers`` has its
token; ``Served.session`` is a ``requests`` session that sends it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
from fastapi import FastAPI

from patchbay.adapters.api_token import api_token
from patchbay.control.connectors import ConnectorService
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
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


@dataclass
class Served:
    """A running ``patchbay serve``: what it printed at start, and the process."""

    info: dict[str, Any]
    process: subprocess.Popen[str]
    session: requests.Session

    @property
    def url(self) -> str:
        return self.info["url"]

    @property
    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header with the token the server printed at start."""
        return {"Authorization": f"Bearer {self.info['token']}"}


def _read_json(stream: Any) -> dict[str, Any]:
    lines = []
    for line in stream:
        lines.append(line)
        if line.rstrip() == "}":
            return json.loads("".join(lines))
    raise AssertionError(f"serve printed no start document: {''.join(lines)!r}")


@contextlib.contextmanager
def serve_process(home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Run ``patchbay --home HOME serve --port 0 --json ARGS`` in ``cwd`` until the block ends;
    then SIGINT, and kill if it is not gone within 15 s."""
    process = subprocess.Popen(
        ["patchbay", "--home", str(home), "serve", "--port", "0", "--json", *args],
        cwd=cwd,
        env=env or dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    session = requests.Session()
    try:
        assert process.stdout is not None
        info = _read_json(process.stdout)
        if info.get("token"):
            session.headers["Authorization"] = f"Bearer {info['token']}"
        yield Served(info=info, process=process, session=session)
    finally:
        session.close()
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
